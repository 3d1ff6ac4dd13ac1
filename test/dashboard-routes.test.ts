// The read routes added for the dashboard, through HTTP: the quarantine queue with held counts
// (paged), the profiles merged into a profile, and a profile's segment memberships. Scoped by org:
// another org's ids answer 404 / nothing.
import t from 'tap';
import { startServer, call, createAppFixture, createOrg, expectError, identifyCall, trackCall, uid } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

t.test('GET /v1/catalog/quarantine lists held names with counts, paged, and empties on decide', async (t) => {
  const f = await createAppFixture(s);
  const member = f.org.sessions.member;
  t.equal((await call(s.url, 'PATCH', '/v1/settings', { token: f.admin, body: { data: { ingestionPolicy: 'strict' } } })).status, 200);
  const user = uid('u');
  // Allow the identifier's own trait-less identify; hold two events (2 and 1 calls) and one trait.
  for (const ev of ['Held A', 'Held A', 'Held B']) {
    const r = await trackCall(s, f, { identifiers: { userId: user }, event: ev });
    t.equal(r.body?.data?.status, 'quarantined', `${ev} held`);
  }
  const id = await identifyCall(s, f, { identifiers: { userId: user }, traits: { favourite: 'tea' } });
  t.equal(id.status, 200, id.text);

  const all = await call(s.url, 'GET', '/v1/catalog/quarantine', { token: member });
  t.equal(all.status, 200, 'a member may read it');
  t.same(all.body.data.map((e: any) => [e.kind, e.name, e.held]), [['event', 'Held A', 2], ['event', 'Held B', 1], ['trait', 'favourite', 1]]);
  t.ok(all.body.data.every((e: any) => !Number.isNaN(Date.parse(e.firstHeldAt)) && e.firstHeldAt <= e.lastHeldAt), 'times');
  t.equal(all.body.meta.hasMore, false);

  const p1 = await call(s.url, 'GET', '/v1/catalog/quarantine?limit=2', { token: member });
  t.same(p1.body.data.map((e: any) => e.name), ['Held A', 'Held B']);
  t.equal(p1.body.meta.hasMore, true);
  const p2 = await call(s.url, 'GET', `/v1/catalog/quarantine?limit=2&cursor=${p1.body.meta.nextCursor}`, { token: member });
  t.same(p2.body.data.map((e: any) => e.name), ['favourite'], 'the cursor continues after (kind, name)');
  expectError(t, await call(s.url, 'GET', '/v1/catalog/quarantine?cursor=bm9wZQ', { token: member }), 422, 'validation_failed', 'forged cursor');

  const other = await createOrg(s);
  t.same((await call(s.url, 'GET', '/v1/catalog/quarantine', { token: other.sessions.admin })).body.data, [], 'another org sees none of it');

  t.equal((await call(s.url, 'POST', '/v1/catalog/quarantine/deny', { token: f.admin, body: { data: { kind: 'event', name: 'Held A' } } })).body.data.dropped, 2);
  t.equal((await call(s.url, 'POST', '/v1/catalog/quarantine/promote', { token: f.admin, body: { data: { kind: 'trait', name: 'favourite' } } })).body.data.promoted, 1);
  const after = await call(s.url, 'GET', '/v1/catalog/quarantine', { token: member });
  t.same(after.body.data.map((e: any) => e.name), ['Held B'], 'decided names leave the queue');
});

t.test('GET /v1/profiles/{id}/merged and /segments', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  const user = uid('user');
  const a = await identifyCall(s, f, { identifiers: { anonymousId: anon }, traits: { tier: 'gold' } });
  const b = await identifyCall(s, f, { identifiers: { userId: user }, traits: { tier: 'gold' } });
  t.equal(a.status, 200);
  t.equal(b.status, 200);
  const seg = await call(s.url, 'POST', '/v1/segments', { token: f.admin, body: { data: { name: 'gold', definition: { match: 'all', predicates: [{ kind: 'trait', name: 'tier', op: 'eq', value: 'gold' }] } } } });
  t.equal(seg.status, 201, seg.text);
  const segs = await call(s.url, 'GET', `/v1/profiles/${b.body.data.id}/segments`, { token: f.org.sessions.member });
  t.equal(segs.status, 200);
  t.same(segs.body.data.map((m: any) => [m.segmentId, m.profileId]), [[seg.body.data.id, b.body.data.id]]);
  t.ok(Date.parse(segs.body.data[0].enteredAt) > 0, 'enteredAt');

  // One call with both identifiers merges the newer profile into the older one.
  const m = await identifyCall(s, f, { identifiers: { anonymousId: anon, userId: user } });
  t.equal(m.status, 200, m.text);
  const survivor = m.body.data.id as string;
  const gone = survivor === a.body.data.id ? b.body.data.id : a.body.data.id;
  const merged = await call(s.url, 'GET', `/v1/profiles/${survivor}/merged`, { token: f.org.sessions.member });
  t.equal(merged.status, 200);
  t.same(merged.body.data.map((p: any) => [p.id, p.mergedInto]), [[gone, survivor]]);
  t.same((await call(s.url, 'GET', `/v1/profiles/${gone}/merged`, { token: f.admin })).body.data, [], 'nothing merged into the merged-away one');
  t.same((await call(s.url, 'GET', `/v1/profiles/${gone}/segments`, { token: f.admin })).body.data, [], 'a merged-away profile is a member of none');

  const other = await createOrg(s);
  expectError(t, await call(s.url, 'GET', `/v1/profiles/${survivor}/merged`, { token: other.sessions.admin }), 404, 'not_found', 'another org');
  expectError(t, await call(s.url, 'GET', `/v1/profiles/${survivor}/segments`, { token: other.sessions.admin }), 404, 'not_found', 'another org');
  expectError(t, await call(s.url, 'GET', '/v1/profiles/prf_nope/segments', { token: f.admin }), 404, 'not_found', 'unknown id');
  expectError(t, await call(s.url, 'GET', `/v1/profiles/${survivor}/merged`, { token: f.key }), 401, 'invalid_key', 'API key');
});
