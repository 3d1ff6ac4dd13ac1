// Segments (OpenAPI document: "Segments"): routes and their validation, transitions and
// their system events on identify / track, event counts and time windows, create and update over
// existing profiles, merges, delete, cascades and concurrency. Everything through HTTP.
import t, { type Test } from 'tap';
import { startServer, call, poll, createAppFixture, createOrg, expectError, markerLanded, metric, until, type AppFixture, uid, identifyCall, trackCall } from './helpers/server.js';

// A fast sweep so windows can age out within a test; a small preview cap to see truncation.
const s = await startServer(['--segment-sweep-ms', '300', '--segment-preview-cap', '25']);
t.teardown(() => s.close());

const identify = (f: AppFixture, data: Record<string, unknown>) => identifyCall(s, f, data);
const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const create = (f: AppFixture, data: Record<string, unknown>, token = f.admin) => call(s.url, 'POST', '/v1/segments', { token, body: { data } });
const get = (f: AppFixture, id: string) => call(s.url, 'GET', `/v1/segments/${id}`, { token: f.admin });
const patch = (f: AppFixture, id: string, data: Record<string, unknown>) => call(s.url, 'PATCH', `/v1/segments/${id}`, { token: f.admin, body: { data } });
const previewOf = (f: AppFixture, data: Record<string, unknown>) => call(s.url, 'POST', '/v1/segments/preview', { token: f.admin, body: { data } });

async function members(f: AppFixture, id: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await call(s.url, 'GET', `/v1/segments/${id}/members?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token: f.admin });
    if (r.status !== 200) throw new Error(`members: ${r.status} ${r.text}`);
    out.push(...r.body.data.map((m: any) => m.profileId));
    cursor = r.body.meta.nextCursor ?? undefined;
    if (!cursor) return out.sort();
  }
}

/** The profile's system events (oldest first), as landed in ClickHouse. */
async function systemEvents(f: AppFixture, profileId: string): Promise<any[]> {
  const out: any[] = [];
  for (const event of ['system.segment_entered', 'system.segment_exited']) {
    const r = await call(s.url, 'GET', `/v1/events?profileId=${profileId}&event=${event}&limit=100`, { token: f.admin });
    if (r.status !== 200) throw new Error(`events: ${r.status} ${r.text}`);
    out.push(...r.body.data);
  }
  return out.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : a.id < b.id ? -1 : 1));
}
/**
 * Polls until the profile has `n` system events (they land asynchronously), then until every stored
 * system event is published (the outbox backlog is empty) and a later event, of an org of its own,
 * landed: a further event of the profile would have landed before it.
 */
let markers: AppFixture | undefined;
async function settledSystemEvents(f: AppFixture, profileId: string, n: number): Promise<any[]> {
  await poll(() => systemEvents(f, profileId), (l) => l.length >= n, 10_000);
  if (!await until(async () => await metric(s, 'headwater_backlog', { kind: 'outbox' }) === 0, 10_000, 50)) throw new Error('system events still in the outbox');
  if (!await markerLanded(s, markers ??= await createAppFixture(s))) throw new Error('the marker event did not land');
  return systemEvents(f, profileId);
}
const summary = (evs: any[]) => evs.map((e) => `${e.event === 'system.segment_entered' ? 'entered' : 'exited'}:${e.properties.segmentName}`);

async function profileOf(t: Test, f: AppFixture, userId: string, traits: Record<string, unknown> = {}) {
  const r = await identify(f, { identifiers: { userId }, traits });
  t.equal(r.status, 200, `identify ${userId}: ${r.text.slice(0, 200)}`);
  return r.body.data.id as string;
}

t.test('create, fetch, list, update, delete: fields, defaults and memberCount', async (t) => {
  const f = await createAppFixture(s);
  const c = await create(f, { name: 'Pros', definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }, { kind: 'event', name: 'Paid', op: 'notPerformed' }] } });
  t.equal(c.status, 201, c.text);
  const seg = c.body.data;
  t.match(seg, { orgId: f.org.org.id, name: 'Pros', description: null, environments: ['development', 'production'], memberCount: 0 });
  t.same(seg.definition, { match: 'all', appId: null, predicates: [{ kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }, { kind: 'event', name: 'Paid', op: 'notPerformed', atLeast: 1 }] }, 'defaults: match all, atLeast 1, appId null');
  t.type(seg.createdAt, 'string');

  const g = await get(f, seg.id);
  t.equal(g.status, 200);
  t.same(g.body.data, seg, 'fetch answers the same Segment with memberCount');

  const other = await create(f, { name: 'Other', description: 'd', environments: ['production'], definition: { match: 'any', appId: [f.app.id], predicates: [{ kind: 'trait', name: 'x', op: 'exists' }] } });
  t.equal(other.status, 201, other.text);
  t.same(other.body.data.definition.appId, [f.app.id], 'appId as an array');
  const l = await call(s.url, 'GET', '/v1/segments?limit=1', { token: f.admin });
  t.equal(l.status, 200);
  t.equal(l.body.data.length, 1);
  t.equal(l.body.data[0].id, other.body.data.id, 'newest first');
  t.notOk('memberCount' in l.body.data[0], 'list items have no memberCount');
  const l2 = await call(s.url, 'GET', `/v1/segments?limit=1&cursor=${l.body.meta.nextCursor}`, { token: f.admin });
  t.same(l2.body.data.map((x: any) => x.id), [seg.id], 'second page');
  t.equal(l2.body.meta.hasMore, false);
  const q = await call(s.url, 'GET', '/v1/segments?q=PRO', { token: f.admin });
  t.same(q.body.data.map((x: any) => x.id), [seg.id], 'q matches the name case-insensitively');

  const u = await patch(f, seg.id, { name: 'Pro users', description: 'paying', environments: ['development'] });
  t.equal(u.status, 200, u.text);
  t.match(u.body.data, { name: 'Pro users', description: 'paying', environments: ['development'], memberCount: 0 });
  t.same(u.body.data.definition, seg.definition, 'definition kept when not given');
  const u2 = await patch(f, seg.id, { description: null });
  t.equal(u2.body.data.description, null, 'description cleared with null');
  t.equal(u2.body.data.name, 'Pro users');

  const d = await call(s.url, 'DELETE', `/v1/segments/${seg.id}`, { token: f.admin });
  t.equal(d.status, 200);
  t.same(d.body.data, { deleted: true });
  expectError(t, await get(f, seg.id), 404, 'not_found', 'deleted');
  expectError(t, await call(s.url, 'DELETE', `/v1/segments/${seg.id}`, { token: f.admin }), 404, 'not_found', 'deleted twice');
});

t.test('validation, roles and other orgs', async (t) => {
  const f = await createAppFixture(s);
  const bad: Array<[string, unknown, string?]> = [
    ['no predicates', { name: 'a', definition: { predicates: [] } }],
    ['empty name', { name: '', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } }],
    ['name of 101', { name: 'n'.repeat(101), definition: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } }],
    ['predicate name of 201', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'p'.repeat(201), op: 'exists' }] } }],
    ['unknown op', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'like', value: 1 }] } }],
    ['event op on a trait', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'performed' }] } }],
    ['atLeast 0', { name: 'a', definition: { predicates: [{ kind: 'event', name: 'a', op: 'performed', atLeast: 0 }] } }],
    ['withinDays 0', { name: 'a', definition: { predicates: [{ kind: 'event', name: 'a', op: 'performed', withinDays: 0 }] } }],
    ['no environments', { name: 'a', environments: [], definition: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } }],
    ['bad match', { name: 'a', definition: { match: 'some', predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } }],
    ['eq without value', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'eq' }] } }, '/predicates/0'],
    ['gt with a boolean', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'gt', value: true }] } }, '/predicates/0/value'],
    ['lt with a non-date string', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'lt', value: 'soon' }] } }, '/predicates/0/value'],
    ['contains without value', { name: 'a', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }, { kind: 'trait', name: 'b', op: 'contains' }] } }, '/predicates/1'],
  ];
  for (const [what, data, names] of bad) expectError(t, await create(f, data as Record<string, unknown>), 422, 'validation_failed', what, names);
  expectError(t, await previewOf(f, { predicates: [{ kind: 'trait', name: 'a', op: 'gte' }] }), 422, 'validation_failed', 'preview gte without value', '/predicates/0');
  expectError(t, await create(f, { name: 'a', definition: { appId: 'app_nope', predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } }), 404, 'not_found', 'unknown app');

  const ok = await create(f, { name: 'mine', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } });
  t.equal(ok.status, 201);
  const id = ok.body.data.id;
  // An org:member reads and previews, but does not mutate.
  expectError(t, await create(f, { name: 'x', definition: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } }, f.org.sessions.member), 403, 'forbidden', 'member create');
  expectError(t, await call(s.url, 'PATCH', `/v1/segments/${id}`, { token: f.org.sessions.member, body: { data: { name: 'y' } } }), 403, 'forbidden', 'member update');
  expectError(t, await call(s.url, 'DELETE', `/v1/segments/${id}`, { token: f.org.sessions.member }), 403, 'forbidden', 'member delete');
  t.equal((await call(s.url, 'GET', `/v1/segments/${id}`, { token: f.org.sessions.member })).status, 200, 'member fetch');
  t.equal((await call(s.url, 'POST', '/v1/segments/preview', { token: f.org.sessions.member, body: { data: { predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } } })).status, 200, 'member preview');
  expectError(t, await call(s.url, 'GET', '/v1/segments', { token: f.key }), 401, 'invalid_key', 'api key');

  const o = await createOrg(s);
  for (const [m, p] of [['GET', `/v1/segments/${id}`], ['PATCH', `/v1/segments/${id}`], ['DELETE', `/v1/segments/${id}`], ['GET', `/v1/segments/${id}/members`]] as const) {
    expectError(t, await call(s.url, m, p, { token: o.sessions.admin, body: m === 'PATCH' ? { data: { name: 'z' } } : undefined }), 404, 'not_found', `other org ${m} ${p}`);
  }
  expectError(t, await call(s.url, 'POST', '/v1/segments', { token: o.sessions.admin, body: { data: { name: 'a', definition: { appId: f.app.id, predicates: [{ kind: 'trait', name: 'a', op: 'exists' }] } } } }), 404, 'not_found', 'another org\'s app');
  t.equal((await get(f, id)).body.data.name, 'mine', 'untouched by the other org');
  expectError(t, await call(s.url, 'GET', `/v1/segments/${id}/members?cursor=abc`, { token: f.admin }), 422, 'validation_failed', 'forged cursor');
});

// Trait predicate semantics, one table, through preview over profiles of every value type.
t.test('trait predicates: every operator and type (preview)', async (t) => {
  const f = await createAppFixture(s);
  const traits: Record<string, Record<string, unknown>> = {
    n5: { n: 5 }, n10: { n: 10.5 }, nstr: { n: '5' }, nnull: { n: null }, none: {},
    d1: { d: '2024-01-01T00:00:00Z' }, d2: { d: '2024-06-01T12:00:00+02:00' }, ddate: { d: '2024-03-01' }, dbad: { d: 'yesterday' },
    str: { s: 'hello world' }, arr: { tags: ['a', 'b', 3, { x: 1 }] }, obj: { o: { a: 1, b: [1, 2] } }, bool: { b: true },
  };
  const label = new Map<string, string>();
  for (const [k, v] of Object.entries(traits)) label.set(await profileOf(t, f, uid(k), v), k);
  const all = Object.keys(traits);
  const except = (...xs: string[]) => all.filter((x) => !xs.includes(x));
  const P = (name: string, op: string, value?: unknown) => (value === undefined ? { kind: 'trait', name, op } : { kind: 'trait', name, op, value });
  const rows: Array<[string, Record<string, unknown>, string[]]> = [
    ['eq number', { predicates: [P('n', 'eq', 5)] }, ['n5']],
    ['eq is exact: "5" is not 5', { predicates: [P('n', 'eq', '5')] }, ['nstr']],
    ['eq null', { predicates: [P('n', 'eq', null)] }, ['nnull']],
    ['eq boolean', { predicates: [P('b', 'eq', true)] }, ['bool']],
    ['eq boolean vs string', { predicates: [P('b', 'eq', 'true')] }, []],
    ['eq object, key order ignored', { predicates: [P('o', 'eq', { b: [1, 2], a: 1 })] }, ['obj']],
    ['eq object, partial', { predicates: [P('o', 'eq', { a: 1 })] }, []],
    ['eq array in order', { predicates: [P('tags', 'eq', ['a', 'b', 3, { x: 1 }])] }, ['arr']],
    ['eq array out of order', { predicates: [P('tags', 'eq', ['b', 'a', 3, { x: 1 }])] }, []],
    ['neq: absent counts as different', { predicates: [P('n', 'neq', 5)] }, except('n5')],
    ['gt number', { predicates: [P('n', 'gt', 5)] }, ['n10']],
    ['gte number', { predicates: [P('n', 'gte', 5)] }, ['n5', 'n10']],
    ['lt number', { predicates: [P('n', 'lt', 10.5)] }, ['n5']],
    ['lte number', { predicates: [P('n', 'lte', 10.5)] }, ['n5', 'n10']],
    ['gt date-time', { predicates: [P('d', 'gt', '2024-02-01T00:00:00Z')] }, ['d2', 'ddate']],
    ['lt date', { predicates: [P('d', 'lt', '2024-02-01')] }, ['d1']],
    ['gte date-time across offsets', { predicates: [P('d', 'gte', '2024-06-01T10:00:00Z')] }, ['d2']],
    ['lte date-time', { predicates: [P('d', 'lte', '2024-06-01T10:00:00Z')] }, ['d1', 'd2', 'ddate']],
    ['gt: number trait vs date value is false', { predicates: [P('n', 'gt', '2000-01-01')] }, []],
    ['gt: date trait vs number value is false', { predicates: [P('d', 'gt', 0)] }, []],
    ['exists (null is present)', { predicates: [P('n', 'exists')] }, ['n5', 'n10', 'nstr', 'nnull']],
    ['notExists', { predicates: [P('n', 'notExists')] }, except('n5', 'n10', 'nstr', 'nnull')],
    ['contains substring', { predicates: [P('s', 'contains', 'lo w')] }, ['str']],
    ['contains: no substring', { predicates: [P('s', 'contains', 'xyz')] }, []],
    ['contains array member string', { predicates: [P('tags', 'contains', 'a')] }, ['arr']],
    ['contains array member number', { predicates: [P('tags', 'contains', 3)] }, ['arr']],
    ['contains array member object', { predicates: [P('tags', 'contains', { x: 1 })] }, ['arr']],
    ['contains: not a member', { predicates: [P('tags', 'contains', 'c')] }, []],
    ['contains: number on a string trait', { predicates: [P('s', 'contains', 5)] }, []],
    ['contains on a number trait', { predicates: [P('n', 'contains', 5)] }, []],
    ['match all', { match: 'all', predicates: [P('n', 'exists'), P('n', 'neq', null)] }, ['n5', 'n10', 'nstr']],
    ['match any', { match: 'any', predicates: [P('n', 'eq', 5), P('s', 'exists')] }, ['n5', 'str']],
    ['appId of this app', { appId: f.app.id, predicates: [P('b', 'exists')] }, ['bool']],
  ];
  for (const [what, def, want] of rows) {
    const r = await previewOf(f, def);
    t.equal(r.status, 200, `${what}: ${r.text.slice(0, 200)}`);
    t.same(r.body.data.members.map((id: string) => label.get(id)).sort(), [...want].sort(), what);
    t.equal(r.body.data.memberCount, want.length, `${what}: memberCount`);
    t.equal(r.body.data.scanned, all.length, `${what}: scanned`);
    t.equal(r.body.data.truncated, false, `${what}: not truncated`);
  }
});

t.test('preview scans at most the cap and says it was truncated', async (t) => {
  const f = await createAppFixture(s);
  for (let i = 0; i < 30; i++) await profileOf(t, f, uid('p'), { i });
  const r = await previewOf(f, { predicates: [{ kind: 'trait', name: 'i', op: 'gte', value: 0 }] });
  t.equal(r.status, 200, r.text);
  t.match(r.body.data, { memberCount: 25, scanned: 25, truncated: true });
  t.equal(r.body.data.members.length, 25);
  const g = await create(f, { name: 'all', definition: { predicates: [{ kind: 'trait', name: 'i', op: 'gte', value: 0 }] } });
  t.equal(g.body.data.memberCount, 30, 'a segment itself has no cap');
});

t.test('identify and track move a profile in and out, with one system event per transition', async (t) => {
  const f = await createAppFixture(s);
  const pro = (await create(f, { name: 'pro', definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }] } })).body.data;
  const buyers = (await create(f, { name: 'buyers', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed', atLeast: 3 }] } })).body.data;
  const user = uid('u');
  const id = await profileOf(t, f, user, { plan: 'free' });
  t.same(await members(f, pro.id), [], 'free: not a member');
  await profileOf(t, f, user, { plan: 'pro' });
  t.same(await members(f, pro.id), [id], 'pro: a member before the identify answered');
  await profileOf(t, f, user, { plan: 'pro', seats: 3 });
  await profileOf(t, f, user, { plan: 'team' });
  t.same(await members(f, pro.id), [], 'team: out again');
  for (let i = 0; i < 2; i++) t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(f, buyers.id), [], 'two purchases: not yet');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Viewed' })).status, 201);
  t.same(await members(f, buyers.id), [], 'another event does not count');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(f, buyers.id), [id], 'the third purchase: a member');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);

  const evs = await settledSystemEvents(f, id, 3);
  t.same(summary(evs), ['entered:pro', 'exited:pro', 'entered:buyers'], 'exactly the real transitions');
  t.same(evs[0].properties, { segmentId: pro.id, segmentName: 'pro' });
  t.match(evs[0], { profileId: id, appId: f.app.id, environment: f.app.environment });
  const m = await call(s.url, 'GET', `/v1/segments/${buyers.id}/members`, { token: f.admin });
  t.match(m.body.data[0], { segmentId: buyers.id, orgId: f.org.org.id, profileId: id });
  t.type(m.body.data[0].enteredAt, 'string');
  t.equal((await get(f, buyers.id)).body.data.memberCount, 1);
});

t.test('batch writes recompute too; a segment of another environment or app never applies', async (t) => {
  const f = await createAppFixture(s);
  const g = await createAppFixture(s, { org: f.org });
  const envOther = f.app.environment === 'production' ? 'development' : 'production';
  const here = (await create(f, { name: 'here', definition: { appId: f.app.id, predicates: [{ kind: 'event', name: 'Ping', op: 'performed' }] } })).body.data;
  const elsewhere = (await create(f, { name: 'elsewhere', environments: [envOther], definition: { predicates: [{ kind: 'event', name: 'Ping', op: 'performed' }] } })).body.data;
  const a = uid('a');
  const r = await call(s.url, 'POST', '/v1/batch', { token: f.key, body: { data: { sourceId: f.source.id, calls: [
    { type: 'track', identifiers: { anonymousId: a }, event: 'Ping', messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: a }, event: 'Ping', messageId: uid('m') },
  ] } } });
  t.equal(r.status, 200, r.text);
  const pid = r.body.data[0].data.profileId;
  t.same(await members(f, here.id), [pid], 'batch track: a member');
  t.same(await members(f, elsewhere.id), [], 'other environment: never');
  const r2 = await call(s.url, 'POST', '/v1/track', { token: g.key, body: { data: { sourceId: g.source.id, identifiers: { anonymousId: uid('b') }, event: 'Ping', messageId: uid('m') } } });
  t.equal(r2.status, 201);
  t.same(await members(f, here.id), [pid], 'a profile of another app does not enter an app-restricted segment');
});

t.test('create and update decide over existing profiles (with history from before) and emit the events', async (t) => {
  const f = await createAppFixture(s);
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const id = await profileOf(t, f, uid('u'), { score: i });
    ids.push(id);
    if (i % 3 === 0) t.equal((await track(f, { identifiers: { userId: (await call(s.url, 'GET', `/v1/profiles/${id}`, { token: f.admin })).body.data.identifiers[0].value }, event: 'Signup' })).status, 201);
  }
  const c = await create(f, { name: 'high', definition: { predicates: [{ kind: 'trait', name: 'score', op: 'gte', value: 6 }] } });
  t.equal(c.status, 201);
  t.equal(c.body.data.memberCount, 6, 'memberCount exact in the create answer');
  t.same(await members(f, c.body.data.id), ids.slice(6).sort());
  const signed = await create(f, { name: 'signed', definition: { predicates: [{ kind: 'event', name: 'Signup', op: 'performed' }] } });
  t.equal(signed.body.data.memberCount, 4, 'history stored before the segment counts');

  const u = await patch(f, c.body.data.id, { definition: { predicates: [{ kind: 'trait', name: 'score', op: 'lt', value: 2 }] } });
  t.equal(u.status, 200, u.text);
  t.equal(u.body.data.memberCount, 2, 'memberCount exact after update');
  t.same(await members(f, c.body.data.id), ids.slice(0, 2).sort());
  const e11 = await settledSystemEvents(f, ids[11]!, 2);
  t.same(summary(e11), ['entered:high', 'exited:high'], 'create entered it, update exited it');
  const e0 = await settledSystemEvents(f, ids[0]!, 2);
  t.same(summary(e0).sort(), ['entered:high', 'entered:signed'], 'update entered it (and create of signed)');

  const env = f.app.environment === 'production' ? 'development' : 'production';
  const u2 = await patch(f, c.body.data.id, { environments: [env] });
  t.equal(u2.body.data.memberCount, 0, 'moving the segment to the other environment exits everyone');

  const del = await call(s.url, 'DELETE', `/v1/segments/${signed.body.data.id}`, { token: f.admin });
  t.equal(del.status, 200);
  const after = await settledSystemEvents(f, ids[0]!, 3);
  t.same(summary(after).filter((x) => x.endsWith(':signed')), ['entered:signed'], 'delete emits no exits');
});

t.test('a merge leaves only the survivor a member, recomputed', async (t) => {
  const f = await createAppFixture(s);
  const seg = (await create(f, { name: 'two clicks', definition: { predicates: [{ kind: 'event', name: 'Click', op: 'performed', atLeast: 2 }] } })).body.data;
  const a = uid('a');
  const b = uid('b');
  const pa = (await track(f, { identifiers: { anonymousId: a }, event: 'Click' })).body.data.profileId;
  const pb = (await track(f, { identifiers: { anonymousId: b }, event: 'Click' })).body.data.profileId;
  const c2 = await track(f, { identifiers: { anonymousId: b }, event: 'Click' });
  t.same(await members(f, seg.id), [pb], 'b clicked twice');
  const m = await identify(f, { identifiers: { anonymousId: a, email: `${uid('m')}@example.com` } });
  t.equal(m.status, 200);
  const m2 = await identify(f, { identifiers: { anonymousId: b, email: m.body.data.identifiers.find((i: any) => i.kind === 'email').value } });
  t.equal(m2.status, 200);
  t.equal(m2.body.data.id, pa, 'merged into the older profile');
  t.equal(c2.body.data.profileId, pb);
  t.same(await members(f, seg.id), [pa], 'the merged-away profile is gone; the survivor has 3 clicks');
});

t.test('system events cascade: a segment over segment_entered', async (t) => {
  const f = await createAppFixture(s);
  await create(f, { name: 'vip', definition: { predicates: [{ kind: 'trait', name: 'vip', op: 'eq', value: true }] } });
  const ever = (await create(f, { name: 'ever entered', definition: { predicates: [{ kind: 'event', name: 'system.segment_entered', op: 'performed' }] } })).body.data;
  const id = await profileOf(t, f, uid('u'), { vip: true });
  t.same(await members(f, ever.id), [id], 'entering vip made it enter "ever entered" in the same write');
  const evs = await settledSystemEvents(f, id, 2);
  t.same(summary(evs).sort(), ['entered:ever entered', 'entered:vip']);
});

t.test('withinDays: the sweep exits aged-out performers and enters notPerformed profiles', async (t) => {
  const f = await createAppFixture(s);
  const recent = (await create(f, { name: 'recent', definition: { predicates: [{ kind: 'event', name: 'Visit', op: 'performed', withinDays: 1 }] } })).body.data;
  const lapsed = (await create(f, { name: 'lapsed', definition: { predicates: [{ kind: 'trait', name: 'k', op: 'exists' }, { kind: 'event', name: 'Visit', op: 'notPerformed', withinDays: 1 }] } })).body.data;
  const user = uid('u');
  const id = await profileOf(t, f, user, { k: 1 });
  t.same(await members(f, lapsed.id), [id], 'never visited: lapsed');
  // A visit stamped so that it leaves the 1-day window about 5 s from now.
  const stamp = new Date(Date.now() - 86_400_000 + 5_000).toISOString();
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Visit', timestamp: stamp })).status, 201);
  t.same(await members(f, recent.id), [id], 'inside the window: recent');
  t.same(await members(f, lapsed.id), [], 'and not lapsed');
  const old = await track(f, { identifiers: { userId: uid('o') }, event: 'Visit', timestamp: new Date(Date.now() - 2 * 86_400_000).toISOString() });
  t.equal(old.status, 201);
  t.same(await members(f, recent.id), [id], 'an event already outside the window does not count');
  await poll(() => members(f, recent.id), (m) => m.length === 0, 10_000);
  t.same(await members(f, recent.id), [], 'aged out: the sweep exited it');
  // The sweep moves one segment after the other.
  t.same(await poll(() => members(f, lapsed.id), (m) => m.length === 1, 10_000), [id], 'and entered it into lapsed');
  const evs = await settledSystemEvents(f, id, 5);
  const names = summary(evs);
  t.equal(names.filter((x) => x === 'exited:recent').length, 1, 'one exit from recent');
  t.equal(names.filter((x) => x === 'entered:lapsed').length, 2, 'entered lapsed twice (before the visit, after it aged out)');
  t.equal(names.filter((x) => x === 'exited:lapsed').length, 1, 'exited lapsed once (the visit)');
});

t.test('concurrent writes to one profile: right membership, one event per real transition', async (t) => {
  const f = await createAppFixture(s);
  const busy = (await create(f, { name: 'busy', definition: { predicates: [{ kind: 'event', name: 'Tap', op: 'performed', atLeast: 10 }] } })).body.data;
  const odd = (await create(f, { name: 'odd', definition: { predicates: [{ kind: 'trait', name: 'v', op: 'eq', value: 1 }] } })).body.data;
  const user = uid('u');
  const id = await profileOf(t, f, user, { v: 0 });
  const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0
    ? track(f, { identifiers: { userId: user }, event: 'Tap' })
    : identify(f, { identifiers: { userId: user }, traits: { v: (i >> 1) % 2 } }))));
  t.ok(rs.every((r) => r.status === 200 || r.status === 201), 'all accepted');
  t.same(await members(f, busy.id), [id], '20 taps: busy');
  const final = (await call(s.url, 'GET', `/v1/profiles/${id}`, { token: f.admin })).body.data.traits.v;
  t.same(await members(f, odd.id), final === 1 ? [id] : [], `membership of odd follows the final v=${final}`);
  const names = summary(await settledSystemEvents(f, id, 1));
  t.equal(names.filter((x) => x.endsWith(':busy')).length, 1, 'exactly one busy transition');
  // Entries and exits of one segment alternate from "not a member": a duplicated or lost
  // transition would leave their difference off the final state.
  const entered = names.filter((x) => x === 'entered:odd').length;
  const exited = names.filter((x) => x === 'exited:odd').length;
  t.equal(entered - exited, final === 1 ? 1 : 0, `odd: ${entered} entries, ${exited} exits, final v=${final}`);
});

t.test('a promoted (held) event is a write too: its replay recomputes memberships', async (t) => {
  const f = await createAppFixture(s);
  const admin = (m: string, p: string, data?: unknown) => call(s.url, m, p, { token: f.admin, body: data === undefined ? undefined : { data } });
  t.equal((await admin('PATCH', '/v1/settings', { ingestionPolicy: 'strict' })).status, 200);
  const seg = (await create(f, { name: 'upgraded', definition: { predicates: [{ kind: 'event', name: 'Upgraded', op: 'performed' }] } })).body.data;
  const user = uid('u');
  const held = await track(f, { identifiers: { userId: user }, event: 'Upgraded' });
  t.same([held.status, held.body.data], [200, { status: 'quarantined' }], 'held');
  t.same(await members(f, seg.id), [], 'a held event counts for nothing');
  const p = await admin('POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Upgraded' });
  t.same([p.status, p.body.data], [200, { promoted: 1 }]);
  const prof = await call(s.url, 'GET', `/v1/profiles?kind=userId&value=${user}`, { token: f.admin });
  t.same(await members(f, seg.id), [prof.body.data[0].id], 'the replay entered the profile');
  t.same(summary(await settledSystemEvents(f, prof.body.data[0].id, 1)), ['entered:upgraded']);
});

t.test('event counts at many windows of one event: each window and threshold exact', async (t) => {
  // Seven windows of one name (more than one scan holds): counts at every window, by backfill on
  // create and by the recompute of a write.
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await profileOf(t, f, user);
  const daysAgo = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 10.5, -1]; // -1: a future timestamp, which counts
  for (const d of daysAgo) {
    const r = await track(f, { identifiers: { userId: user }, event: 'Ping', timestamp: new Date(Date.now() - d * 86_400_000).toISOString() });
    t.equal(r.status, 201);
  }
  const windows: Array<[number | undefined, number]> = [[1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [undefined, 8]];
  const segs: Array<{ id: string; withinDays?: number; atLeast: number }> = [];
  for (const [withinDays, count] of windows) {
    for (const atLeast of [count, count + 1]) {
      const r = await create(f, { name: `ping-${withinDays ?? 'all'}-${atLeast}`, definition: { predicates: [{ kind: 'event', name: 'Ping', op: 'performed', atLeast, ...(withinDays ? { withinDays } : {}) }] } });
      t.equal(r.status, 201, r.text.slice(0, 200));
      t.equal(r.body.data.memberCount, atLeast === count ? 1 : 0, `${withinDays ?? 'all'} days, atLeast ${atLeast}: ${count} events`);
      segs.push({ id: r.body.data.id, withinDays, atLeast });
    }
  }
  // One more event now: every window holds one more, so every segment has the profile.
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Ping' })).status, 201);
  for (const sg of segs) t.same(await members(f, sg.id), [profile], `${sg.withinDays ?? 'all'} days, atLeast ${sg.atLeast} after one more`);
});
