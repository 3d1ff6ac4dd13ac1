// Identify calls of known profiles (the fast path, pipeline/fast-track.ts with migration 27, once
// the process knows every identifier's owner) answer and write exactly what the general path does:
// each identify answers its profile as that call left it, a replayed messageId changes nothing,
// governance and trait segments decide as before, and concurrent batches lose no trait. The same
// behaviour is asserted in every mode.
import t, { type Test } from 'tap';
import { adminCall, batchCall, startServer, createAppFixture, poll, uid, identifyCall, trackCall, type AppFixture } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const identify = (f: AppFixture, data: Record<string, unknown>) => identifyCall(s, f, data);
const admin = (f: AppFixture, method: string, path: string, data?: unknown) => adminCall(s, f, method, path, data);
const batch = (f: AppFixture, calls: unknown[]) => batchCall(s, f, calls);
const profileOf = async (f: AppFixture, id: string) => (await admin(f, 'GET', `/v1/profiles/${id}`)).body.data;

/** Two calls per user: the first teaches the process the owner, the second uses it. */
async function known(t: Test, f: AppFixture, userId: string): Promise<string> {
  const a = await track(f, { identifiers: { userId }, event: 'Seen' });
  const b = await track(f, { identifiers: { userId }, event: 'Seen' });
  t.same([a.status, b.status], [201, 201], 'known');
  t.equal(b.body.data.profileId, a.body.data.profileId, 'same profile');
  return a.body.data.profileId;
}

t.test('identifies in a batch answer the profile as each call left it', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, user);
  const ids = { userId: user };
  const r = await batch(f, [
    { type: 'identify', identifiers: ids, traits: { plan: 'pro' }, messageId: uid('m') },
    { type: 'track', identifiers: ids, event: 'Upgraded', messageId: uid('m') },
    { type: 'identify', identifiers: ids, traits: { seats: 3, plan: 'team', consent: { email: true } }, messageId: uid('m') },
    { type: 'identify', identifiers: ids, traits: {} },
  ]);
  t.equal(r.status, 200);
  const out = r.body.data as any[];
  t.same(out.map((x) => x.status), [200, 201, 200, 200]);
  t.same(out[0].data.traits, { plan: 'pro' }, 'the first identify: its own trait only');
  t.equal(out[0].data.id, profile);
  t.equal(out[1].data.profileId, profile, 'the track lands on the profile');
  t.same(out[2].data.traits, { plan: 'team', seats: 3 }, 'the second: both, merged in order');
  t.same(out[2].data.consent, { email: true }, 'consent is not a trait');
  t.same(out[0].data.consent, {}, 'consent arrives with its call');
  const stored = await profileOf(f, profile);
  t.same(out[3].data, stored, 'the last identify answers the profile as stored, identifiers and times included');
  t.same(out[2].data, stored, 'an identify without traits changes nothing');
  t.same(stored.identifiers.map((i: any) => [i.kind, i.value]), [['userId', user]]);
});

t.test('a replayed identify answers the profile as it is now and writes nothing', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, user);
  const m1 = uid('m');
  t.same((await identify(f, { identifiers: { userId: user }, traits: { plan: 'a' }, messageId: m1 })).body.data.traits, { plan: 'a' });
  t.same((await identify(f, { identifiers: { userId: user }, traits: { plan: 'b' }, messageId: uid('m') })).body.data.traits, { plan: 'b' });
  const r = await batch(f, [
    { type: 'identify', identifiers: { userId: user }, traits: { plan: 'c', extra: 1 }, messageId: m1 },
    { type: 'track', identifiers: { userId: user }, event: 'Seen', messageId: uid('m') },
  ]);
  t.same(r.body.data.map((x: any) => x.status), [200, 201]);
  t.same(r.body.data[0].data.traits, { plan: 'b' }, 'the replay answers the profile as it is');
  t.same((await profileOf(f, profile)).traits, { plan: 'b' }, 'and changed nothing');
  const again = await identify(f, { identifiers: { userId: user }, traits: { plan: 'd' }, messageId: m1 });
  t.same(again.body.data.traits, { plan: 'b' }, 'alone too');
});

t.test('governance decides identifies of known profiles: denied, strict', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, user);
  t.equal((await admin(f, 'POST', '/v1/catalog/traits', { name: 'secret', type: 'string' })).status, 201);
  t.equal((await admin(f, 'POST', '/v1/catalog/traits/secret/state', { state: 'denied' })).status, 200);
  const denied = await batch(f, [
    { type: 'identify', identifiers: { userId: user }, traits: { plan: 'x' } },
    { type: 'identify', identifiers: { userId: user }, traits: { secret: 'no' } },
  ]);
  t.same(denied.body.data.map((x: any) => x.status), [200, 422]);
  t.equal(denied.body.data[1].error.code, 'trait_denied');
  t.same((await profileOf(f, profile)).traits, { plan: 'x' }, 'the denied call wrote nothing');
  t.equal((await admin(f, 'PATCH', '/v1/settings', { ingestionPolicy: 'strict' })).status, 200);
  const held = await identify(f, { identifiers: { userId: user }, traits: { plan: 'y', brandNew: 1 } });
  t.equal(held.status, 200);
  const after = await profileOf(f, profile);
  t.equal(after.traits.brandNew, undefined, 'an unknown trait under strict policy is held, not written');
});

t.test('a trait segment decides on identifies of known profiles', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, user);
  const seg = await admin(f, 'POST', '/v1/segments', { name: 'pros', definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }] } });
  t.equal(seg.status, 201);
  const members = async () => ((await admin(f, 'GET', `/v1/segments/${seg.body.data.id}/members`)).body.data as any[]).map((x) => x.profileId);
  await known(t, f, user);
  t.equal((await identify(f, { identifiers: { userId: user }, traits: { plan: 'pro' } })).status, 200);
  t.same(await members(), [profile], 'entered with the identify');
  t.equal((await batch(f, [{ type: 'identify', identifiers: { userId: user }, traits: { plan: 'free' } }])).status, 200);
  t.same(await members(), [], 'left with the next');
});

t.test('an identify after a merge lands on the survivor', async (t) => {
  const f = await createAppFixture(s);
  const a = uid('user'), b = `${uid('e')}@example.com`;
  const older = await known(t, f, a);
  const t2 = await track(f, { identifiers: { email: b }, event: 'Seen' });
  await track(f, { identifiers: { email: b }, event: 'Seen' });
  const newer = t2.body.data.profileId;
  t.not(older, newer);
  t.equal((await identify(f, { identifiers: { userId: a, email: b } })).body.data.id, older, 'merged');
  const r = await identify(f, { identifiers: { email: b }, traits: { plan: 'pro' } });
  t.equal(r.body.data.id, older, 'the survivor answers');
  t.same((await profileOf(f, older)).traits, { plan: 'pro' });
  t.equal((await profileOf(f, newer)).mergedInto, older);
});

t.test('batches racing identifies on one profile: every trait written once, replays change nothing', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, user);
  const ms = Array.from({ length: 8 }, () => uid('m'));
  const bodies = (v: number) => ms.map((m, i) => [
    { type: 'identify', identifiers: { userId: user }, traits: { [`k${i}`]: v }, messageId: m },
    { type: 'track', identifiers: { userId: user }, event: 'Raced', messageId: `${m}-t` },
  ]);
  const first = await Promise.all(bodies(1).map((b) => batch(f, b)));
  t.same(first.map((r) => r.body.data.map((x: any) => x.status)), Array(8).fill([200, 201]));
  const want = Object.fromEntries(ms.map((_, i) => [`k${i}`, 1]));
  t.same((await profileOf(f, profile)).traits, want, 'every batch\'s trait');
  const again = await Promise.all(bodies(2).map((b) => batch(f, b)));
  t.same(again.map((r) => r.body.data.map((x: any) => x.status)), Array(8).fill([200, 200]), 'replays');
  t.same((await profileOf(f, profile)).traits, want, 'the replays wrote nothing');
  const evs = await poll(() => admin(f, 'GET', `/v1/events?profileId=${profile}&event=Raced&limit=100`), (r) => (r.body?.data?.length ?? 0) >= 8);
  t.equal(evs.body.data.length, 8, 'each track stored once');
});

t.test('identifies racing a merge: every trait lands on the survivor', async (t) => {
  // Against a Postgres server the fast path runs beside the merge (other worker threads): a trait
  // written to the profile being folded must reach the survivor, whichever commits first.
  const f = await createAppFixture(s);
  const anon = uid('anon'), email = `${uid('e')}@example.com`;
  const first = await track(f, { identifiers: { anonymousId: anon }, event: 'Seen' });
  const older = first.body.data.profileId;
  await track(f, { identifiers: { email }, event: 'Seen' });
  // Every worker thread learns both owners (calls spread over the threads).
  const teach = await Promise.all(Array.from({ length: 8 }, (_, i) => track(f, { identifiers: i % 2 ? { anonymousId: anon } : { email }, event: 'Seen' })));
  t.same(teach.map((r) => r.status), Array(8).fill(201));
  const waves = 8, perWave = 6;
  const pending: Array<Promise<{ status: number }>> = [];
  for (let w = 0; w < waves; w++) {
    for (let i = 0; i < perWave; i++) {
      pending.push(identify(f, { identifiers: i % 2 ? { anonymousId: anon } : { email }, traits: { [`w${w}i${i}`]: true }, messageId: uid('m') }));
    }
    if (w === waves / 2) pending.push(identify(f, { identifiers: { anonymousId: anon, email } }));
    await new Promise((r) => setTimeout(r, 3)); // pacing, not a wait: the waves overlap in the workers
  }
  const statuses = (await Promise.all(pending)).map((r) => r.status);
  t.same(statuses, Array(waves * perWave + 1).fill(200), 'every identify answered');
  const survivor = await profileOf(f, older);
  t.equal(survivor.mergedInto, null, 'the oldest survives');
  const want = Object.fromEntries(Array.from({ length: waves * perWave }, (_, k) => [`w${Math.floor(k / perWave)}i${k % perWave}`, true]));
  t.same(survivor.traits, want, 'every trait on the survivor');
  t.same(survivor.identifiers.map((i: any) => i.kind).sort(), ['anonymousId', 'email']);
});
