// Track calls of known profiles (embedded: the fast path, pipeline/fast-track.ts, which decides
// with what the process cached) answer exactly what the general path answers when what they were
// decided with changed in between: a merge moving identifiers, a replayed messageId, a denied
// event, strict policy, a new segment watching the event, an archived source. The same behaviour
// is asserted in every mode; in embedded mode the second call of each profile takes the fast path.
import t, { type Test } from 'tap';
import pg from 'pg';
import { startServer, call, createAppFixture, expectError, markerLanded, metric, poll, until, uid, identifyCall, trackCall, type AppFixture } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const identify = (f: AppFixture, data: Record<string, unknown>) => identifyCall(s, f, data);
const admin = (f: AppFixture, method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token: f.admin, body: data === undefined ? undefined : { data } });
const batch = (f: AppFixture, calls: unknown[]) =>
  call(s.url, 'POST', '/v1/batch', { token: f.key, body: { data: { sourceId: f.source.id, calls } } });

/** Two calls per identifier set: the first teaches the process the owner, the second uses it. */
async function known(t: Test, f: AppFixture, identifiers: Record<string, string>): Promise<string> {
  const a = await track(f, { identifiers, event: 'Seen' });
  t.equal(a.status, 201, 'first track');
  const b = await track(f, { identifiers, event: 'Seen' });
  t.equal(b.status, 201, 'second track');
  t.equal(b.body.data.profileId, a.body.data.profileId, 'same profile');
  return a.body.data.profileId;
}

t.test('after a merge, the merged-away profile\'s identifiers land on the survivor', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon'), email = `${uid('e')}@example.com`;
  const older = await known(t, f, { anonymousId: anon });
  const newer = await known(t, f, { email });
  t.not(older, newer);
  const merged = await identify(f, { identifiers: { anonymousId: anon, email } });
  t.equal(merged.status, 200);
  t.equal(merged.body.data.id, older, 'merged into the oldest');
  const byEmail = await track(f, { identifiers: { email }, event: 'After merge' });
  t.equal(byEmail.status, 201);
  t.equal(byEmail.body.data.profileId, older, 'the email now belongs to the survivor');
  const byAnon = await track(f, { identifiers: { anonymousId: anon }, event: 'After merge' });
  t.equal(byAnon.body.data.profileId, older);
  // And again, now that the process learned the new owners.
  t.equal((await track(f, { identifiers: { email }, event: 'Later' })).body.data.profileId, older);
  const gone = await admin(f, 'GET', `/v1/profiles/${newer}`);
  t.equal(gone.body.data?.mergedInto, older, 'the other profile points at the survivor');
});

t.test('replays of known profiles answer the original, alone and beside new calls', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const m = uid('m');
  const first = await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m, properties: { n: 1 } });
  t.equal(first.status, 201);
  const again = await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m, properties: { n: 2 } });
  t.equal(again.status, 200, 'a replay answers 200');
  t.same(again.body.data, first.body.data, 'with the original event');
  const m2 = uid('m');
  const b = await batch(f, [
    { type: 'track', identifiers: { userId: user }, event: 'Bought', messageId: m },
    { type: 'track', identifiers: { userId: user }, event: 'Viewed', messageId: m2 },
  ]);
  t.same(b.body.data.map((x: any) => x.status), [200, 201]);
  t.same(b.body.data[0].data, first.body.data);
  t.equal(b.body.data[1].data.profileId, profile);
  const evs = await poll(() => admin(f, 'GET', `/v1/events?profileId=${profile}&limit=100`), (r) => (r.body?.data?.length ?? 0) >= 4);
  const ids = (evs.body.data as any[]).map((e) => e.messageId);
  t.equal(ids.filter((x) => x === m).length, 1, 'the replayed event is stored once');
  t.equal(ids.filter((x) => x === m2).length, 1);
});

t.test('an event denied after the profile is known is refused, and nothing is written', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  await known(t, f, { userId: user });
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'Forbidden' })).status, 201);
  t.equal((await admin(f, 'POST', '/v1/catalog/events/Forbidden/state', { state: 'denied' })).status, 200);
  const m = uid('m');
  expectError(t, await track(f, { identifiers: { userId: user }, event: 'Forbidden', messageId: m }), 422, 'event_denied', 'denied');
  // The messageId was not taken.
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Allowed', messageId: m })).status, 201);
});

t.test('strict policy set after the profile is known holds unknown events', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  await known(t, f, { userId: user });
  t.equal((await admin(f, 'PATCH', '/v1/settings', { ingestionPolicy: 'strict' })).status, 200);
  const r = await track(f, { identifiers: { userId: user }, event: 'Brand new' });
  t.equal(r.status, 200);
  t.same(r.body.data, { status: 'quarantined' });
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Seen' })).status, 201, 'a known event still goes through');
});

t.test('a segment created after the profile is known sees its next event', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const seg = await admin(f, 'POST', '/v1/segments', { name: 'buyers', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed', atLeast: 1 }] } });
  t.equal(seg.status, 201, seg.text.slice(0, 300));
  t.equal(seg.body.data.memberCount, 0);
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  const m = await admin(f, 'GET', `/v1/segments/${seg.body.data.id}/members`);
  t.same((m.body.data as any[]).map((x) => x.profileId), [profile], 'a member as soon as the call is answered');
});

t.test('a source archived after the profile is known refuses its calls', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  await known(t, f, { anonymousId: anon });
  t.equal((await admin(f, 'DELETE', `/v1/sources/${f.source.id}`)).status, 200);
  expectError(t, await track(f, { identifiers: { anonymousId: anon }, event: 'Seen' }), 403, 'forbidden', 'archived source');
});

t.test('segments are decided on known profiles: counts across calls, one entry, replays count once', async (t) => {
  const f = await createAppFixture(s);
  const seg = await admin(f, 'POST', '/v1/segments', { name: 'thrice', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed', atLeast: 3 }] } });
  t.equal(seg.status, 201);
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const members = async () => ((await admin(f, 'GET', `/v1/segments/${seg.body.data.id}/members`)).body.data as any[]).map((x) => x.profileId);
  const m = uid('m');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m })).status, 201);
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m })).status, 200, 'a replay');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(), [], 'two purchases (the replay does not count)');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(), [profile], 'the third: a member');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(), [profile], 'still a member');
  const entered = () => admin(f, 'GET', `/v1/events?profileId=${profile}&event=system.segment_entered&limit=100`);
  await poll(entered, (r) => (r.body?.data?.length ?? 0) >= 1, 10_000);
  // Every stored system event published, then a later event (of an org of its own) landed: a second
  // entry event would have landed before it.
  t.ok(await until(async () => await metric(s, 'headwater_backlog', { kind: 'outbox' }) === 0, 10_000, 50), 'the system-event outbox is empty');
  t.ok(await markerLanded(s, await createAppFixture(s)), 'a later event landed');
  t.equal((await entered()).body.data.length, 1, 'one entry event');
});

t.test('tracks racing a merge: every event lands on the survivor, once', async (t) => {
  // Against a Postgres server the fast path runs beside the merge (other worker threads): the
  // merge must see, and move, the history a concurrent fast write adds to the profile it folds.
  const f = await createAppFixture(s);
  const anon = uid('anon'), email = `${uid('e')}@example.com`;
  const older = await known(t, f, { anonymousId: anon });
  await known(t, f, { email });
  // Every worker thread learns both owners (calls spread over the threads).
  const teach = await Promise.all(Array.from({ length: 8 }, (_, i) => track(f, { identifiers: i % 2 ? { anonymousId: anon } : { email }, event: 'Seen' })));
  t.same(teach.map((r) => r.status), Array(8).fill(201));
  // Waves of tracks on both profiles, so that several batches run at once, with the merge inside.
  const waves = 8, perWave = 6;
  const pending: Array<Promise<{ status: number }>> = [];
  for (let w = 0; w < waves; w++) {
    for (let i = 0; i < perWave; i++) pending.push(track(f, { identifiers: i % 2 ? { anonymousId: anon } : { email }, event: 'Race' }));
    if (w === waves / 2) pending.push(identify(f, { identifiers: { anonymousId: anon, email } }));
    await new Promise((r) => setTimeout(r, 3)); // pacing, not a wait: the waves overlap in the workers
  }
  const statuses = (await Promise.all(pending)).map((r) => r.status);
  t.equal(statuses.filter((x) => x === 201).length, waves * perWave, `every track written (statuses ${statuses.join(' ')})`);
  t.equal(statuses.filter((x) => x === 200).length, 1, 'the merge answered');
  // A segment created now decides on the stored history: the survivor holds every Race event.
  const seg = (atLeast: number) => admin(f, 'POST', '/v1/segments', { name: `race-${atLeast}`, definition: { predicates: [{ kind: 'event', name: 'Race', op: 'performed', atLeast }] } });
  const all = await seg(waves * perWave);
  t.equal(all.status, 201);
  t.equal(all.body.data.memberCount, 1, 'the survivor counts all of them');
  const members = await admin(f, 'GET', `/v1/segments/${all.body.data.id}/members`);
  t.same((members.body.data as any[]).map((x) => x.profileId), [older]);
  t.equal((await seg(waves * perWave + 1)).body.data.memberCount, 0, 'and none twice');
});

t.test('a track waits while another transaction holds its profile, as a merge does', { skip: !process.env.DATABASE_URL && 'needs a Postgres server' }, async (t) => {
  // Why the race above cannot lose history: a merge locks every profile it folds before it moves
  // identifiers or history, and the fast path locks its profiles before it checks anything.
  const f = await createAppFixture(s);
  const email = `${uid('e')}@example.com`;
  const profile = await known(t, f, { email });
  await Promise.all(Array.from({ length: 6 }, () => track(f, { identifiers: { email }, event: 'Seen' })));
  const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT 1 FROM profiles WHERE id = $1 FOR UPDATE', [profile]);
    let answered = false;
    const held = Promise.all(Array.from({ length: 4 }, () => track(f, { identifiers: { email }, event: 'Held' }))).then((r) => { answered = true; return r; });
    // Positive signal first: a track waits for this transaction (pg_locks is read live, unlike pg_stat_activity).
    const waiting = () => c.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted AND transactionid = pg_current_xact_id()::text::xid`);
    t.ok(await until(async () => (await waiting()).rows[0].n > 0, 10_000, 20), 'a track waits for the lock');
    t.notOk(answered, 'not answered while the profile is held');
    await c.query('COMMIT');
    t.same((await held).map((r) => r.status), [201, 201, 201, 201], 'answered once it is free');
  } finally {
    await c.query('ROLLBACK').catch(() => {});
    await c.end();
  }
});
