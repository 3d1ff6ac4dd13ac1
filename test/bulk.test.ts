// The bulk track path (pipeline/bulk.ts) gives every call the answer and effects of the per-call
// path: one profile per identifier, merges and userId conflicts, replays and in-batch duplicates,
// rejects writing nothing, and a value Postgres cannot store failing only its own call.
import t, { type Test } from 'tap';
import { adminCall, batchCall, startServer, call, createAppFixture, type AppFixture, uid, identifyCall, trackCall } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const identify = (f: AppFixture, data: Record<string, unknown>) => identifyCall(s, f, data);
const batch = (f: AppFixture, calls: unknown[]) => batchCall(s, f, calls);
const lookup = (f: AppFixture, kind: string, value: string) =>
  call(s.url, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`, { token: f.admin });
const admin = (f: AppFixture, method: string, path: string, data?: unknown) => adminCall(s, f, method, path, data);
const kindsOf = (p: any) => ((p?.identifiers ?? []) as any[]).map((i) => `${i.kind}=${i.value}`).sort();

async function only(t: Test, f: AppFixture, kind: string, value: string): Promise<any> {
  const r = await lookup(f, kind, value);
  t.equal(r.status, 200, `lookup ${kind}`);
  t.equal(r.body?.data?.length, 1, `one live profile holds ${kind}=${value}`);
  return r.body?.data?.[0];
}

t.test('a batch of track calls: new profiles, attached identifiers, replays, rejects, duplicates', async (t) => {
  const f = await createAppFixture(s);
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'Forbidden' })).status, 201);
  t.equal((await admin(f, 'POST', '/v1/catalog/events/Forbidden/state', { state: 'denied' })).status, 200);
  const known = uid('anon');
  const first = await track(f, { identifiers: { anonymousId: known }, event: 'Before' });
  t.equal(first.status, 201);
  const second = await track(f, { identifiers: { anonymousId: uid('anon') }, event: 'Before too' });
  t.equal(second.status, 201);
  const userA = uid('user');
  const pa = await identify(f, { identifiers: { userId: userA } });
  t.equal(pa.status, 200);

  const a1 = uid('anon'), a2 = uid('anon'), email = `${uid('e')}@example.com`, dup = uid('m'), other = uid('user');
  const calls = [
    /* 0 */ { type: 'track', identifiers: { anonymousId: a1 }, event: 'New', messageId: uid('m') },
    /* 1 */ { type: 'track', identifiers: { anonymousId: a1, email }, event: 'Same lane', messageId: uid('m') },
    /* 2 */ { type: 'track', identifiers: { anonymousId: known, userId: userA + '-x' }, event: 'Existing', messageId: uid('m') },
    /* 3 */ { type: 'track', identifiers: { anonymousId: a2 }, event: 'Forbidden', messageId: uid('m') },
    /* 4 */ { type: 'track', identifiers: { anonymousId: uid('anon') }, event: 'Replay', messageId: first.body.data.messageId },
    /* 5 */ { type: 'track', identifiers: { anonymousId: uid('anon') }, event: 'Forbidden', messageId: second.body.data.messageId },
    /* 6 */ { type: 'track', identifiers: { userId: other }, event: 'Dup', messageId: dup },
    /* 7 */ { type: 'track', identifiers: { userId: other }, event: 'Dup again', messageId: dup },
    /* 8 */ { type: 'track', identifiers: { anonymousId: known, userId: userA }, event: 'Conflict', messageId: uid('m') },
  ];
  const r = await batch(f, calls);
  t.equal(r.status, 200, r.text.slice(0, 300));
  const out = r.body?.data ?? [];
  t.same(out.map((x: any) => [x.status, x.error?.code ?? null]), [
    [201, null], [201, null], [201, null], [422, 'event_denied'], [200, null], [200, null], [201, null], [200, null], [201, null],
  ], 'statuses in order');
  t.equal(out[0].data.profileId, out[1].data.profileId, 'one lane, one profile');
  const p1 = await only(t, f, 'email', email);
  t.equal(p1.id, out[0].data.profileId);
  t.same(kindsOf(p1), [`anonymousId=${a1}`, `email=${email}`].sort(), 'identifiers attached');
  // `known` has no userId yet: call 2 lands on it and attaches its userId; call 8's other userId
  // gets a profile of its own (never two userIds on one profile).
  t.equal(out[2].data.profileId, first.body.data.profileId, 'lands on the existing profile');
  const pk = await only(t, f, 'anonymousId', known);
  t.same(kindsOf(pk), [`anonymousId=${known}`, `userId=${userA}-x`].sort());
  t.equal(out[8].data.profileId, pa.body.data.id, 'the call of userA lands on userA\'s profile');
  t.same(out[4].data, first.body.data, 'replay answers the original event');
  t.same(out[5].data, second.body.data, 'a rejected call whose messageId was claimed answers the original');
  t.same(out[7].data, out[6].data, 'in-batch duplicate answers the first');
  const none = await lookup(f, 'anonymousId', a2);
  t.same(none.body?.data, [], 'nothing of the rejected call was written');
  // The rejected call's messageId was not claimed.
  t.equal((await track(f, { identifiers: { anonymousId: a2 }, event: 'Allowed', messageId: calls[3]!.messageId })).status, 201);
  // Replaying the whole batch answers every original.
  const again = await batch(f, calls);
  t.same(again.body.data.map((x: any) => x.status), [200, 200, 200, 200, 200, 200, 200, 200, 200]);
  t.same(again.body.data[0].data, out[0].data);
  t.same(again.body.data[3].data.event, 'Allowed');
});

t.test('a lane that merges profiles runs call by call, in order', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon'), user = uid('user');
  const pA = await track(f, { identifiers: { anonymousId: anon }, event: 'A' });
  const pU = await track(f, { identifiers: { userId: user }, event: 'U' });
  t.not(pA.body.data.profileId, pU.body.data.profileId);
  const r = await batch(f, [
    { type: 'track', identifiers: { anonymousId: anon }, event: 'before merge', messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: anon, userId: user }, event: 'merge', messageId: uid('m') },
    { type: 'track', identifiers: { userId: user }, event: 'after merge', messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: uid('anon') }, event: 'bystander', messageId: uid('m') },
  ]);
  t.same(r.body.data.map((x: any) => x.status), [201, 201, 201, 201]);
  const survivor = pA.body.data.profileId; // the oldest
  t.equal(r.body.data[0].data.profileId, survivor);
  t.equal(r.body.data[1].data.profileId, survivor);
  t.equal(r.body.data[2].data.profileId, survivor, 'later calls land on the survivor');
  const p = await only(t, f, 'userId', user);
  t.equal(p.id, survivor);
  t.same(kindsOf(p), [`anonymousId=${anon}`, `userId=${user}`].sort());
});

t.test('a value Postgres cannot store fails only its own call', async (t) => {
  const f = await createAppFixture(s);
  const good = uid('anon');
  const r = await batch(f, [
    { type: 'track', identifiers: { anonymousId: good }, event: 'fine', messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: uid('anon') }, event: 'nul', properties: { bad: 'a\u0000b' }, messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: uid('anon') }, event: 'fine too', messageId: uid('m') },
  ]);
  t.equal(r.status, 200, r.text.slice(0, 300));
  t.same(r.body.data.map((x: any) => x.status), [201, 422, 201]);
  t.equal(r.body.data[1].error?.code, 'validation_failed');
  await only(t, f, 'anonymousId', good);
});

t.test('200 track calls over 20 users in batches: one profile per user', async (t) => {
  const f = await createAppFixture(s);
  const users = Array.from({ length: 20 }, () => uid('user'));
  const batches = Array.from({ length: 4 }, (_, b) => Array.from({ length: 50 }, (_, i) => ({
    type: 'track', identifiers: { userId: users[(b * 50 + i) % 20], anonymousId: `anon-${users[(b * 50 + i) % 20]}` }, event: 'Tick', messageId: uid('m'),
  })));
  const rs = await Promise.all(batches.map((c) => batch(f, c)));
  for (const r of rs) t.same(r.body.data.map((x: any) => x.status), Array(50).fill(201));
  const byUser = new Map<string, Set<string>>();
  rs.forEach((r, b) => r.body.data.forEach((x: any, i: number) => {
    const u = users[(b * 50 + i) % 20]!;
    if (!byUser.has(u)) byUser.set(u, new Set());
    byUser.get(u)!.add(x.data.profileId);
  }));
  for (const [u, ps] of byUser) {
    t.equal(ps.size, 1, `one profile for ${u}`);
    const p = await only(t, f, 'userId', u);
    t.ok(ps.has(p.id));
  }
});

t.test('identify calls in a batch: each answer is the profile as that call left it, the same as one by one', async (t) => {
  const f = await createAppFixture(s);
  t.equal((await admin(f, 'POST', '/v1/catalog/traits', { name: 'secret', type: 'string' })).status, 201);
  t.equal((await admin(f, 'POST', '/v1/catalog/traits/secret/state', { state: 'denied' })).status, 200);
  const known = uid('user');
  const before = await identify(f, { identifiers: { userId: known }, traits: { plan: 'free', keep: 1 } });
  t.equal(before.status, 200);
  const a = uid('anon'), b = uid('anon'), m1 = uid('m'), m2 = uid('m');
  const calls = [
    /* 0 */ { type: 'identify', identifiers: { anonymousId: a }, traits: { name: 'Ann' }, messageId: m1 },
    /* 1 */ { type: 'identify', identifiers: { anonymousId: a, email: `${a}@example.com` }, traits: { plan: 'pro', consent: { email: true } } },
    /* 2 */ { type: 'track', identifiers: { anonymousId: a }, event: 'Clicked', messageId: uid('m') },
    /* 3 */ { type: 'identify', identifiers: { userId: known }, traits: { plan: 'team' }, messageId: m2 },
    /* 4 */ { type: 'identify', identifiers: { anonymousId: b }, traits: { secret: 'x' } },
    /* 5 */ { type: 'identify', identifiers: { userId: known } },
  ];
  const r = await batch(f, calls);
  t.equal(r.status, 200, r.text.slice(0, 300));
  const out = r.body.data;
  t.same(out.map((x: any) => [x.status, x.error?.code ?? null]), [[200, null], [200, null], [201, null], [200, null], [422, 'trait_denied'], [200, null]]);
  t.same(out[0].data.traits, { name: 'Ann' }, 'the first answer does not show the later call');
  t.same(kindsOf(out[0].data), [`anonymousId=${a}`]);
  t.equal(out[0].data.anonymous, true);
  t.same(out[1].data.traits, { name: 'Ann', plan: 'pro' }, 'consent is not a trait');
  t.same(out[1].data.consent, { email: true });
  t.same(kindsOf(out[1].data), [`anonymousId=${a}`, `email=${a}@example.com`].sort());
  t.equal(out[1].data.id, out[0].data.id, 'one lane, one profile');
  t.equal(out[2].data.profileId, out[0].data.id);
  t.equal(out[3].data.id, before.body.data.id, 'the existing profile');
  t.same(out[3].data.traits, { plan: 'team', keep: 1 }, 'merged onto the stored traits');
  t.equal(out[3].data.createdAt, before.body.data.createdAt);
  t.ok(out[3].data.updatedAt >= before.body.data.updatedAt);
  t.same(out[5].data, out[3].data, 'an identify without traits changes nothing, updatedAt included');
  t.same((await lookup(f, 'anonymousId', b)).body.data, [], 'the rejected call wrote nothing');

  // What is stored equals what was answered.
  const stored = await call(s.url, 'GET', `/v1/profiles/${out[1].data.id}`, { token: f.admin });
  t.same(stored.body.data, out[1].data, 'stored profile = the last answer of its lane');
  t.same((await call(s.url, 'GET', `/v1/profiles/${out[3].data.id}`, { token: f.admin })).body.data, out[5].data);

  // Replays answer the profile as it is now and apply nothing.
  const again = await batch(f, [calls[0], { ...calls[3], traits: { plan: 'ignored' } }]);
  t.same(again.body.data.map((x: any) => x.status), [200, 200]);
  t.same(again.body.data[0].data, stored.body.data, 'identify replay: the profile now');
  t.equal(again.body.data[1].data.traits.plan, 'team', 'the replay applied nothing');

  // The same calls one by one (per-call path) give the same shapes.
  const c = uid('anon');
  const one = await identify(f, { identifiers: { anonymousId: c }, traits: { name: 'Cy' } });
  const two = await identify(f, { identifiers: { anonymousId: c, email: `${c}@example.com` }, traits: { plan: 'pro', consent: { email: true } } });
  t.same(Object.keys(one.body.data).sort(), Object.keys(out[0].data).sort());
  t.same(two.body.data.traits, { name: 'Cy', plan: 'pro' });
  t.same(two.body.data.consent, out[1].data.consent);
});
