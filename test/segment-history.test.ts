// Segment history is written only for event names a segment of the org names; a name named for the
// first time is filled from the stored events (docs/architecture.md, "History"). Through HTTP:
// counts after the fill match what was ingested by every route (single, batch, replays, merges),
// a name named again after a gap is neither doubled nor missing, updates and previews fill too, and
// the org's event retention bounds the fill.
import t from 'tap';
import { startServer, call, createAppFixture, uid, identifyCall, trackCall, batchCall, type AppFixture } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const admin = (f: AppFixture, method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token: f.admin, body: data === undefined ? undefined : { data } });
const performed = (name: string, atLeast: number, withinDays?: number) =>
  ({ predicates: [{ kind: 'event', name, op: 'performed', atLeast, ...(withinDays ? { withinDays } : {}) }] });

/** Creates a segment over `definition`; its memberCount and members (sorted). */
async function segment(f: AppFixture, definition: unknown): Promise<{ id: string; count: number; members: string[] }> {
  const r = await admin(f, 'POST', '/v1/segments', { name: uid('seg'), definition });
  if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`);
  const m = await admin(f, 'GET', `/v1/segments/${r.body.data.id}/members?limit=100`);
  return { id: r.body.data.id, count: r.body.data.memberCount, members: m.body.data.map((x: any) => x.profileId).sort() };
}

const preview = async (f: AppFixture, definition: unknown) => {
  const r = await admin(f, 'POST', '/v1/segments/preview', definition);
  if (r.status !== 200) throw new Error(`preview: ${r.status} ${r.text}`);
  return { count: r.body.data.memberCount as number, members: [...r.body.data.members].sort() as string[] };
};

t.test('a name no segment named: its events from every route count once a segment names it', async (t) => {
  const f = await createAppFixture(s);
  // u: three in a batch (a new profile), one alone, one replayed (stored once): four.
  const u = uid('u');
  const ids = [uid('m'), uid('m'), uid('m')];
  const b = await batchCall(s, f, ids.map((messageId) => ({ type: 'track', identifiers: { userId: u }, event: 'Click', messageId })));
  t.equal(b.status, 200, b.text.slice(0, 300));
  const one = await track(f, { identifiers: { userId: u }, event: 'Click' });
  t.equal(one.status, 201);
  const again = await track(f, { identifiers: { userId: u }, event: 'Click', messageId: ids[0] });
  t.equal(again.status, 200, 'a replay answers the original');
  const pu = one.body.data.profileId as string;
  // v: two as an anonymous visitor, one as a user; merged, the survivor has three.
  const a = uid('a'), w = uid('w');
  const older = await track(f, { identifiers: { anonymousId: a }, event: 'Click' });
  t.equal((await track(f, { identifiers: { anonymousId: a }, event: 'Click' })).status, 201);
  t.equal((await track(f, { identifiers: { userId: w }, event: 'Click' })).status, 201);
  const merged = await identifyCall(s, f, { identifiers: { anonymousId: a, userId: w } });
  t.equal(merged.status, 200, merged.text.slice(0, 300));
  const pv = merged.body.data.id as string;
  t.equal(pv, older.body.data.profileId, 'merged into the older profile');
  // x: one Click, and another name.
  const px = (await track(f, { identifiers: { userId: uid('x') }, event: 'Click' })).body.data.profileId as string;
  t.equal((await track(f, { identifiers: { userId: uid('y') }, event: 'Other' })).status, 201);

  t.same(await preview(f, performed('Click', 3)), { count: 2, members: [pu, pv].sort() }, 'a preview counts them (nothing names Click yet)');
  t.same(await preview(f, performed('Click', 3)), { count: 2, members: [pu, pv].sort() }, 'and again: the preview kept nothing');
  const cases: Array<[number, string[]]> = [[1, [pu, pv, px]], [3, [pu, pv]], [4, [pu]], [5, []]];
  for (const [atLeast, want] of cases) {
    const sg = await segment(f, performed('Click', atLeast));
    t.same([sg.count, sg.members], [want.length, want.sort()], `performed Click at least ${atLeast}`);
  }
  // Named now: further events count as they are written (embedded, the second takes the fast
  // path: the first brought the process the new segment definitions).
  for (let i = 0; i < 2; i++) t.equal((await track(f, { identifiers: { userId: u }, event: 'Click' })).status, 201);
  t.same((await segment(f, performed('Click', 6))).members, [pu], 'the fifth and sixth Click, written with their history');
});

t.test('a name named again after a gap: neither doubled nor missing', async (t) => {
  const f = await createAppFixture(s);
  const u = uid('u');
  for (let i = 0; i < 2; i++) t.equal((await track(f, { identifiers: { userId: u }, event: 'Buy' })).status, 201);
  const first = await segment(f, performed('Buy', 2));
  t.equal(first.count, 1, 'two Buys');
  t.equal((await admin(f, 'DELETE', `/v1/segments/${first.id}`)).status, 200);
  // Nothing names Buy now: this one is written without history.
  const p = (await track(f, { identifiers: { userId: u }, event: 'Buy' })).body.data.profileId;
  t.same((await segment(f, performed('Buy', 3))).members, [p], 'the Buy of the gap counts');
  t.same((await segment(f, performed('Buy', 4))).members, [], 'the two from before are not counted twice');

  // An update that names a new name fills it as a create does.
  t.equal((await track(f, { identifiers: { userId: u }, event: 'Refund' })).status, 201);
  const sg = await segment(f, performed('Buy', 1));
  const up = await admin(f, 'PATCH', `/v1/segments/${sg.id}`, { definition: performed('Refund', 1) });
  t.equal(up.status, 200, up.text.slice(0, 300));
  t.equal(up.body.data.memberCount, 1, 'the update counts the Refund stored before');
});

t.test('the fill keeps to the org\'s event retention', async (t) => {
  const f = await createAppFixture(s);
  t.equal((await admin(f, 'PATCH', '/v1/settings', { retention: { events: 30 } })).status, 200);
  const u = uid('u');
  const ago = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
  for (const days of [40, 10]) t.equal((await track(f, { identifiers: { userId: u }, event: 'Visit', timestamp: ago(days) })).status, 201);
  t.equal((await segment(f, performed('Visit', 1))).count, 1, 'the recent one counts');
  t.equal((await segment(f, performed('Visit', 2))).count, 0, 'the one older than 30 days does not');
});
