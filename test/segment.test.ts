// Segment-compatible ingestion, driven by the real @segment/analytics-node SDK and by raw requests
// shaped like the browser and mobile SDKs': write keys (CRUD, scope, rotation), the mapping of
// identify / track / page / screen / group / alias onto profiles and events (read back through
// GET /v1/profiles and GET /v1/events), messageId dedup of a replayed batch, Segment's answers
// (400 / 401 / 403 / 429), CORS, text/plain bodies, clock-skew correction and the size limits.
import t, { type Test } from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { Analytics } from '@segment/analytics-node';
import { startServer, call, createAppFixture, createOrg, expectError, markerLanded, poll, uid, type AppFixture } from './helpers/server.js';
import { correctedTimestamp, corsPolicy } from '../ingest/segment/mod.js';
import { batchMessages, decodeEvents, encodeEvent, encodeEventRecord, EVENT_BATCH_MARK } from '../schemas/avro.js';

const s = await startServer();
t.teardown(() => s.close());

// Direct database access (the rejections table has no route): the server's PostgreSQL, or the
// embedded PGlite's Unix socket.
const dbUrl = process.env.DATABASE_URL;
const pool = dbUrl ? new pg.Pool({ connectionString: dbUrl, max: 2 })
  : s.dataDir ? new pg.Pool({ host: join(s.dataDir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 2 }) : undefined;
if (pool) t.teardown(() => pool.end());

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;
const newKey = async (f: AppFixture, sourceId = f.source.id) => {
  const r = await call(s.url, 'POST', `/v1/sources/${sourceId}/write-keys`, { token: f.admin });
  if (r.status !== 201) throw new Error(`write key: ${r.status} ${r.text}`);
  return r.body.data as { id: string; writeKey: string; prefix: string; sourceId: string; createdAt: string };
};
/** A POST to a Segment route with the key as Basic auth (or none), the body as given. */
const seg = (path: string, body: unknown, o: { key?: string; contentType?: string; headers?: Record<string, string> } = {}) => {
  const headers: Record<string, string> = { ...o.headers };
  if (o.key) headers.authorization = basic(o.key);
  return call(s.url, 'POST', `/segment/v1/${path}`, { raw: typeof body === 'string' ? body : JSON.stringify(body), contentType: o.contentType ?? 'application/json', headers });
};
const lookup = (f: AppFixture, kind: string, value: string) =>
  call(s.url, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`, { token: f.admin });
const events = (f: AppFixture, qs: Record<string, string>) =>
  call(s.url, 'GET', `/v1/events?${new URLSearchParams(qs)}`, { token: f.admin });
const waitEvents = (f: AppFixture, qs: Record<string, string>, n: number) =>
  poll(() => events(f, qs), (r) => r.status === 200 && r.body.data.length >= n, 8000);
const waitProfile = (f: AppFixture, kind: string, value: string) =>
  poll(() => lookup(f, kind, value), (r) => r.status === 200 && r.body.data.length === 1, 5000);

function sdk(key: string, o: { maxRetries?: number } = {}) {
  const analytics = new Analytics({ writeKey: key, host: s.url, path: '/segment/v1/batch', flushAt: 50, flushInterval: 50, maxRetries: o.maxRetries ?? 0 });
  const errors: Error[] = [];
  const bodies: string[] = [];
  analytics.on('error', (e: any) => errors.push(e?.reason ?? e));
  analytics.on('http_request', (r: any) => bodies.push(r.body));
  return { analytics, errors, bodies };
}

function okAnswer(t: Test, r: { status: number; body: any; text: string }, what: string) {
  t.equal(r.status, 200, `${what}: 200 (${r.text.slice(0, 200)})`);
  t.same(r.body, { success: true }, `${what}: { success: true }`);
}
function refusedAnswer(t: Test, r: { status: number; body: any; text: string }, status: number, code: string, what: string) {
  t.equal(r.status, status, `${what}: ${status} (${r.text.slice(0, 200)})`);
  t.equal(r.body?.success, false, `${what}: success false`);
  t.equal(r.body?.code, code, `${what}: code ${code}`);
  t.ok(typeof r.body?.message === 'string' && r.body.message.length > 0, `${what}: a message`);
}

// ------------------------------------------------------------------ write keys

t.test('write keys: create, list, several live, delete refuses the key', async (t) => {
  const f = await createAppFixture(s);
  const a = await newKey(f);
  t.match(a, { id: /^wk_/, writeKey: /^hww_[A-Za-z0-9_-]{43}$/, sourceId: f.source.id }, 'created with the key');
  t.equal(a.prefix, a.writeKey.slice(0, 12), 'prefix is the key\'s first 12 characters');
  t.ok(!Number.isNaN(Date.parse(a.createdAt)), 'createdAt');
  const b = await newKey(f);
  t.not(a.writeKey, b.writeKey, 'a second key differs');
  const list = await call(s.url, 'GET', `/v1/sources/${f.source.id}/write-keys`, { token: f.org.sessions.member });
  t.equal(list.status, 200, 'a member may list');
  t.same(list.body.data.map((k: any) => k.id), [a.id, b.id], 'both live, oldest first');
  t.same(list.body.data.map((k: any) => k.writeKey), [null, null], 'the key is never shown again');
  const body = (u: string) => ({ userId: u, event: 'Key Used', messageId: uid('m') });
  okAnswer(t, await seg('track', body(uid('u')), { key: a.writeKey }), 'key a');
  okAnswer(t, await seg('track', body(uid('u')), { key: b.writeKey }), 'key b');

  const del = await call(s.url, 'DELETE', `/v1/sources/${f.source.id}/write-keys/${a.id}`, { token: f.admin });
  t.equal(del.status, 200);
  t.same(del.body.data, { deleted: true });
  refusedAnswer(t, await seg('track', body(uid('u')), { key: a.writeKey }), 401, 'invalid_key', 'deleted key');
  okAnswer(t, await seg('track', body(uid('u')), { key: b.writeKey }), 'the other key still works (rotation without a gap)');
  const after = await call(s.url, 'GET', `/v1/sources/${f.source.id}/write-keys`, { token: f.admin });
  t.same(after.body.data.map((k: any) => k.id), [b.id], 'the deleted key is no longer listed');
  expectError(t, await call(s.url, 'DELETE', `/v1/sources/${f.source.id}/write-keys/${a.id}`, { token: f.admin }), 404, 'not_found', 'deleting twice');
  // A body of { data: {} } is accepted as well as none.
  const withBody = await call(s.url, 'POST', `/v1/sources/${f.source.id}/write-keys`, { token: f.admin, body: { data: {} } });
  t.equal(withBody.status, 201, 'created with a { data: {} } body');
});

t.test('write keys: roles, schemes, other orgs, archived sources', async (t) => {
  const f = await createAppFixture(s);
  const key = await newKey(f);
  const path = `/v1/sources/${f.source.id}/write-keys`;
  expectError(t, await call(s.url, 'POST', path, { token: f.org.sessions.member }), 403, 'forbidden', 'member creates');
  expectError(t, await call(s.url, 'DELETE', `${path}/${key.id}`, { token: f.org.sessions.member }), 403, 'forbidden', 'member deletes');
  expectError(t, await call(s.url, 'POST', path, { token: f.org.deployKey }), 403, 'deploy_key_scope', 'deploy key');
  expectError(t, await call(s.url, 'GET', path, { token: f.org.deployKey }), 403, 'deploy_key_scope', 'deploy key lists');
  expectError(t, await call(s.url, 'POST', path, { token: f.org.apiKey }), 401, 'invalid_key', 'API key');
  expectError(t, await call(s.url, 'GET', path, { token: key.writeKey }), 401, 'invalid_key', 'a write key is no bearer');
  expectError(t, await call(s.url, 'GET', '/v1/users/me', { token: key.writeKey }), 401, 'invalid_key', 'a write key on the dashboard');
  expectError(t, await call(s.url, 'POST', '/v1/identify', { token: key.writeKey, body: { data: { sourceId: f.source.id, identifiers: { userId: 'x' } } } }), 401, 'invalid_key', 'a write key on native ingestion');

  const other = await createAppFixture(s, { org: await createOrg(s) });
  expectError(t, await call(s.url, 'POST', path, { token: other.admin }), 404, 'not_found', 'another org creates');
  expectError(t, await call(s.url, 'GET', path, { token: other.admin }), 404, 'not_found', 'another org lists');
  expectError(t, await call(s.url, 'DELETE', `${path}/${key.id}`, { token: other.admin }), 404, 'not_found', 'another org deletes');
  expectError(t, await call(s.url, 'DELETE', `/v1/sources/${other.source.id}/write-keys/${key.id}`, { token: other.admin }), 404, 'not_found', 'a key under another source');
  okAnswer(t, await seg('identify', { userId: uid('u') }, { key: key.writeKey }), 'the key survived');

  t.equal((await call(s.url, 'DELETE', `/v1/sources/${f.source.id}`, { token: f.admin })).status, 200, 'source archived');
  expectError(t, await call(s.url, 'POST', path, { token: f.admin }), 409, 'conflict', 'no key for an archived source');
});

// ------------------------------------------------------------------ the SDK

t.test('analytics-node: identify, track, page, screen, group, alias land as profiles and events', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const { analytics, errors } = sdk(writeKey);
  const anon = uid('anon');
  const user = uid('user');
  const email = `${uid('e')}@example.com`;
  analytics.track({ anonymousId: anon, event: 'Landing Seen', properties: { campaign: 'spring' } });
  await analytics.closeAndFlush({ timeout: 5000 });
  t.same(errors, [], 'no SDK error');
  const anonProfile = await waitProfile(f, 'anonymousId', anon);
  t.equal(anonProfile.body.data.length, 1, 'the anonymous profile exists');

  const second = sdk(writeKey);
  second.analytics.identify({ userId: user, traits: { email, plan: 'pro' } });
  second.analytics.track({ userId: user, event: 'Signed Up', properties: { source: 'ad' } });
  second.analytics.page({ userId: user, name: 'Pricing', category: 'Docs', properties: { path: '/pricing' } });
  second.analytics.screen({ userId: user, name: 'Home', properties: { tab: 1 } });
  second.analytics.group({ userId: user, groupId: 'acme', traits: { seats: 20 } });
  second.analytics.alias({ previousId: anon, userId: user });
  await second.analytics.closeAndFlush({ timeout: 5000 });
  t.same(second.errors, [], 'no SDK error');

  const byUser = await waitProfile(f, 'userId', user);
  const p = byUser.body.data[0];
  t.equal(p.traits.email, email, 'traits.email');
  t.equal(p.traits.plan, 'pro', 'identify traits');
  t.equal(p.traits.groupId, 'acme', 'group sets the groupId trait');
  const kinds = (p.identifiers as any[]).map((i) => `${i.kind}=${i.value}`).sort();
  t.ok(kinds.includes(`email=${email}`), 'traits.email is an email identifier');
  t.ok(kinds.includes(`anonymousId=${anon}`), 'alias merged the anonymous profile');
  t.equal(p.id, anonProfile.body.data[0].id, 'merged into the oldest (the anonymous) profile');
  const byEmail = await lookup(f, 'email', email);
  t.equal(byEmail.body.data[0]?.id, p.id, 'found by email');

  const ev = await waitEvents(f, { profileId: p.id }, 5);
  const byName = new Map<string, any>((ev.body.data as any[]).map((e) => [e.event, e]));
  t.same([...byName.keys()].sort(), ['Group Identified', 'Landing Seen', 'Page Viewed', 'Screen Viewed', 'Signed Up'], 'the events, history merged');
  t.same(byName.get('Signed Up').properties, { source: 'ad' }, 'track properties');
  t.same(byName.get('Page Viewed').properties, { path: '/pricing', name: 'Pricing', category: 'Docs' }, 'page: name and category in properties');
  t.same(byName.get('Screen Viewed').properties, { tab: 1, name: 'Home' }, 'screen');
  t.same(byName.get('Group Identified').properties, { seats: 20, groupId: 'acme' }, 'group: traits and groupId');
  t.match(byName.get('Signed Up').messageId, /\S/, 'the SDK\'s messageId is kept');
  t.equal(byName.get('Signed Up').sourceId, f.source.id, 'attributed to the key\'s source');
  t.equal(byName.get('Signed Up').context?.library?.name, '@segment/analytics-node', 'the context is kept with the event');
  t.notOk('ip' in byName.get('Signed Up').context, 'a server library\'s call gets no ip from the request');
  const catalog = await call(s.url, 'GET', '/v1/catalog/events/Signed%20Up', { token: f.admin });
  t.equal(catalog.status, 200);
  t.same(Object.keys(catalog.body.data.properties), ['source'], 'the context does not enter the tracking plan');
});

t.test('alias: two userIds never merge; equal ids are a no-op', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const [a, b, lone] = [uid('user'), uid('user'), uid('user')];
  okAnswer(t, await seg('identify', { userId: a, traits: { who: 'a' } }, { key: writeKey }), 'identify a');
  okAnswer(t, await seg('identify', { userId: b, traits: { who: 'b' } }, { key: writeKey }), 'identify b');
  okAnswer(t, await seg('alias', { previousId: a, userId: b }, { key: writeKey }), 'alias a -> b');
  const pa = await waitProfile(f, 'userId', a);
  const pb = await waitProfile(f, 'userId', b);
  t.not(pa.body.data[0].id, pb.body.data[0].id, 'still two profiles');
  t.equal(pa.body.data[0].mergedInto, null, 'a was not merged away');
  t.equal(pb.body.data[0].traits.who, 'b', 'b kept its traits');
  okAnswer(t, await seg('alias', { previousId: lone, userId: lone }, { key: writeKey }), 'alias to itself');
  t.same((await lookup(f, 'userId', lone)).body.data, [], 'nothing was written');
});

t.test('a replayed batch (same messageIds) stores nothing twice', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const { analytics, errors, bodies } = sdk(writeKey);
  const user = uid('user');
  analytics.track({ userId: user, event: 'Paid', properties: { n: 1 } });
  analytics.track({ userId: user, event: 'Paid', properties: { n: 2 } });
  await analytics.closeAndFlush({ timeout: 5000 });
  t.same(errors, []);
  t.equal(bodies.length, 1, 'one request');
  // The SDK's retry sends the same body again.
  okAnswer(t, await seg('batch', bodies[0]!, { key: writeKey }), 'replay');
  okAnswer(t, await seg('batch', bodies[0]!, { key: writeKey }), 'replay again');
  const p = await waitProfile(f, 'userId', user);
  const ev = await waitEvents(f, { profileId: p.body.data[0].id }, 2);
  t.ok(await markerLanded(s, f), 'a later event landed'); // and a duplicate, had there been one, before it
  const again = await events(f, { profileId: p.body.data[0].id });
  t.equal(again.body.data.length, 2, 'two events, not six');
  t.same(again.body.data.map((e: any) => e.properties.n).sort(), [1, 2]);
  t.equal(ev.status, 200);
});

t.test('the SDK gets 401 for a bad write key and 403 for an archived source', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const bad = sdk('hww_' + 'x'.repeat(43));
  bad.analytics.track({ userId: 'u', event: 'Nope' });
  await bad.analytics.closeAndFlush({ timeout: 5000 });
  t.equal(bad.errors.length, 1, 'one error');
  t.match(String(bad.errors[0]?.message ?? bad.errors[0]), /401/, 'the SDK reports 401');

  t.equal((await call(s.url, 'DELETE', `/v1/sources/${f.source.id}`, { token: f.admin })).status, 200);
  // Every front end sees the archive within a second.
  const r = await poll(() => seg('track', { userId: 'u', event: 'Late' }, { key: writeKey }), (x) => x.status === 403, 3000);
  refusedAnswer(t, r, 403, 'forbidden', 'archived source');
  const archived = sdk(writeKey);
  archived.analytics.track({ userId: 'u', event: 'Late' });
  await archived.analytics.closeAndFlush({ timeout: 5000 });
  t.match(String(archived.errors[0]?.message ?? archived.errors[0]), /403/, 'the SDK reports 403');
  const settings = await call(s.url, 'GET', `/segment/v1/projects/${writeKey}/settings`);
  t.equal(settings.status, 403, 'settings refused too');
});

// ------------------------------------------------------------------ browser and mobile shapes

t.test('browser shape: text/plain bodies on the short paths, CORS, settings, metrics', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const origin = 'http://shop.example:3000';
  const pre = await call(s.url, 'OPTIONS', '/segment/v1/t', { headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });
  t.equal(pre.status, 204, 'preflight 204');
  t.equal(pre.headers.get('access-control-allow-origin'), origin, 'origin allowed (default any)');
  t.match(pre.headers.get('access-control-allow-headers'), /authorization/, 'authorization allowed');
  t.match(pre.headers.get('access-control-allow-headers'), /content-type/, 'content-type allowed');
  t.match(pre.headers.get('access-control-allow-methods'), /POST/);
  const preSettings = await call(s.url, 'OPTIONS', `/segment/v1/projects/${writeKey}/settings`, { headers: { origin } });
  t.equal(preSettings.status, 204, 'settings preflight');

  const anon = uid('anon');
  const sentAt = new Date().toISOString();
  const r = await seg('t', { type: 'track', anonymousId: anon, event: 'Clicked', properties: { x: 1 }, messageId: uid('m'), timestamp: sentAt, sentAt, context: { ip: '203.0.113.7', page: { path: '/' } } },
    { key: writeKey, contentType: 'text/plain', headers: { origin } });
  okAnswer(t, r, 'text/plain track');
  t.equal(r.headers.get('access-control-allow-origin'), origin, 'the answer carries the CORS header');
  okAnswer(t, await seg('p', { anonymousId: anon, properties: { url: 'http://shop.example/' } }, { key: writeKey, contentType: 'text/plain', headers: { 'x-forwarded-for': '198.51.100.9, 10.0.0.1' } }), 'page, no messageId');
  okAnswer(t, await seg('m', '{"series":[]}', { contentType: 'text/plain' }), 'metrics accepted and ignored');
  const p = await waitProfile(f, 'anonymousId', anon);
  const ev = await waitEvents(f, { profileId: p.body.data[0].id }, 2);
  t.same(ev.body.data.map((e: any) => e.event).sort(), ['Clicked', 'Page Viewed']);
  t.ok(ev.body.data.find((e: any) => e.event === 'Page Viewed').messageId, 'a missing messageId gets one');
  t.same(ev.body.data.find((e: any) => e.event === 'Clicked').context, { ip: '203.0.113.7', page: { path: '/' } }, 'a given context.ip is kept');
  t.same(ev.body.data.find((e: any) => e.event === 'Page Viewed').context, { ip: '198.51.100.9' }, 'an absent one is the first X-Forwarded-For address');

  const settings = await call(s.url, 'GET', `/segment/v1/projects/${writeKey}/settings`, { headers: { origin } });
  t.equal(settings.status, 200, 'settings');
  const host = new URL(s.url).host;
  t.same(settings.body.integrations['Segment.io'], { apiKey: writeKey, apiHost: `${host}/segment/v1`, protocol: 'http', unbundledIntegrations: [], addBundledMetadata: false, maybeBundledConfigIds: {} }, 'points back here');
  t.equal(settings.headers.get('access-control-allow-origin'), origin);
  refusedAnswer(t, await call(s.url, 'GET', '/segment/v1/projects/hww_nope/settings'), 401, 'invalid_key', 'settings of an unknown key');
});

t.test('mobile shape: the write key in the batch body, no Authorization; batch context applies', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const user = uid('user');
  const r = await seg('b', {
    writeKey, sentAt: new Date().toISOString(), context: { library: { name: 'analytics-ios' } },
    batch: [
      { type: 'identify', userId: user, traits: { name: 'Ada' }, messageId: uid('m') },
      { type: 'screen', userId: user, name: 'Feed', messageId: uid('m') },
    ],
  });
  okAnswer(t, r, 'batch with the key in the body');
  const p = await waitProfile(f, 'userId', user);
  t.equal(p.body.data[0].traits.name, 'Ada');
  const screen = await waitEvents(f, { profileId: p.body.data[0].id, event: 'Screen Viewed' }, 1);
  const ctx = screen.body.data[0]?.context;
  t.equal(ctx?.library?.name, 'analytics-ios', 'the batch\'s context applies to its calls');
  t.ok(typeof ctx?.ip === 'string' && ctx.ip.length > 0, `a client call gets context.ip from the request (${ctx?.ip})`);
  refusedAnswer(t, await seg('batch', { writeKey: 'hww_nope', batch: [] }), 401, 'invalid_key', 'unknown key in the body');
  refusedAnswer(t, await seg('batch', { batch: [] }), 401, 'invalid_key', 'no key at all');
});

// ------------------------------------------------------------------ answers, limits, skew

t.test('bodies retrying cannot fix are 400; refused calls of a batch do not stop the others', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const cases: Array<[string, string, unknown]> = [
    ['not JSON', 'track', '{"userId":'],
    ['an array', 'track', '[1,2]'],
    ['empty', 'track', ''],
    ['no identity', 'track', { event: 'X' }],
    ['no event name', 'track', { userId: 'u' }],
    ['event not a string', 'track', { userId: 'u', event: 42 }],
    ['userId over 200 characters', 'identify', { userId: 'u'.repeat(201) }],
    ['alias without previousId', 'alias', { userId: 'u' }],
    ['group without groupId', 'group', { userId: 'u' }],
    ['deep nesting', 'track', `{"userId":"u","event":"E","properties":${'{"a":'.repeat(70)}1${'}'.repeat(70)}}`],
    ['batch not an array', 'batch', { batch: {} }],
  ];
  for (const [what, path, body] of cases) refusedAnswer(t, await seg(path, body, { key: writeKey }), 400, 'malformed_request', what);

  const user = uid('user');
  const r = await seg('batch', { batch: [
    { type: 'track', userId: user, event: 'Kept', messageId: uid('m') },
    { type: 'track', event: 'No Identity', messageId: uid('m') },
    { type: 'unknown', userId: user },
    'not an object',
    { type: 'track', userId: user, event: 'Nul\u0000Name', messageId: uid('m') },
    { type: 'identify', userId: user, traits: { email: 'not an e-mail' }, messageId: uid('m') },
    { type: 'alias', userId: user, previousId: user, messageId: uid('m') },
  ] }, { key: writeKey });
  okAnswer(t, r, 'a batch with refused calls');
  const p = await waitProfile(f, 'userId', user);
  const ev = await waitEvents(f, { profileId: p.body.data[0].id }, 1);
  t.ok(ev.body.data.some((e: any) => e.event === 'Kept'), 'the valid call landed');
  t.notOk(ev.body.data.some((e: any) => e.event === 'No Identity'), 'the call without identity did not');
  t.notOk('email' in p.body.data[0].traits, 'a trait failing its canonical validation was not applied');
});

t.test('calls refused by governance or the quota are answered 200 and kept with their reason', { skip: !pool && 'no direct database access' }, async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const denied = `Denied ${uid('e')}`;
  t.equal((await call(s.url, 'POST', '/v1/catalog/events', { token: f.admin, body: { data: { name: denied } } })).status, 201);
  t.equal((await call(s.url, 'POST', `/v1/catalog/events/${encodeURIComponent(denied)}/state`, { token: f.admin, body: { data: { state: 'denied' } } })).status, 200);
  const user = uid('user');
  const ids = { denied: uid('m'), badEmail: uid('m'), noIdentity: uid('m'), kept: uid('m') };
  okAnswer(t, await seg('track', { userId: user, event: denied, messageId: ids.denied }, { key: writeKey }), 'a denied event, alone');
  okAnswer(t, await seg('batch', { batch: [
    { type: 'identify', userId: user, traits: { email: 'nope' }, messageId: ids.badEmail },
    { type: 'page', messageId: ids.noIdentity },
    { type: 'track', userId: user, event: 'Kept', messageId: ids.kept },
  ] }, { key: writeKey }), 'a batch with refused calls');
  const rows = (await pool!.query(
    `SELECT message_id, status, code, message, call FROM segment_rejections WHERE source_id = $1 ORDER BY id`, [f.source.id])).rows;
  const byId = new Map(rows.map((r) => [r.message_id, r]));
  t.equal(byId.get(ids.denied)?.code, 'event_denied', 'the denied event is kept with its code');
  t.equal(byId.get(ids.denied)?.status, 422);
  t.equal(JSON.parse(byId.get(ids.denied)?.call ?? '{}').event, denied, 'with the call as sent');
  t.equal(byId.get(ids.badEmail)?.code, 'trait_validation_failed', 'the bad trait');
  t.match(byId.get(ids.badEmail)?.message, /email/, 'the message names the trait');
  t.equal(byId.get(ids.noIdentity)?.code, 'malformed_request', 'the call without identity');
  t.notOk(byId.has(ids.kept), 'the applied call is not there');
  const p = await waitProfile(f, 'userId', user);
  const ev = await waitEvents(f, { profileId: p.body.data[0].id }, 1);
  t.same(ev.body.data.map((e: any) => e.event), ['Kept'], 'only the applied event is stored');

  // The monthly quota: tracks past it are kept as over_quota, identify still applies.
  const set = await call(s.url, 'PATCH', `/v1/orgs/${f.org.org.id}`, { token: s.operatorToken, body: { data: { limits: { monthlyEvents: 0 } } } });
  t.equal(set.status, 200);
  await new Promise((r) => setTimeout(r, 1100)); // limits are re-read within a second
  const over = uid('m');
  okAnswer(t, await seg('batch', { batch: [
    { type: 'track', userId: user, event: 'Over', messageId: over },
    { type: 'identify', userId: user, traits: { plan: 'quota' }, messageId: uid('m') },
  ] }, { key: writeKey }), 'over the quota');
  const q = (await pool!.query(`SELECT status, code FROM segment_rejections WHERE source_id = $1 AND message_id = $2`, [f.source.id, over])).rows;
  t.same(q, [{ status: 429, code: 'over_quota' }], 'the over-quota track is kept');
  const after = await waitProfile(f, 'userId', user);
  t.equal(after.body.data[0].traits.plan, 'quota', 'the identify of the same batch applied');
});

t.test('limits: 32 KB per call, 500 KB per batch', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const big = 'x'.repeat(33 * 1024);
  refusedAnswer(t, await seg('track', { userId: 'u', event: 'Big', properties: { big } }, { key: writeKey }), 400, 'malformed_request', 'a call over 32 KB');
  const calls = Array.from({ length: 20 }, () => ({ type: 'track', userId: 'u', event: 'Filler', properties: { pad: 'y'.repeat(30 * 1024) } }));
  refusedAnswer(t, await seg('batch', { batch: calls }, { key: writeKey }), 400, 'malformed_request', 'a batch over 500 KB');
  const user = uid('user');
  const r = await seg('batch', { batch: [
    { type: 'track', userId: user, event: 'Small', messageId: uid('m') },
    { type: 'track', userId: user, event: 'Big', properties: { big }, messageId: uid('m') },
  ] }, { key: writeKey });
  okAnswer(t, r, 'a batch holding one call over 32 KB');
  const p = await waitProfile(f, 'userId', user);
  const ev = await waitEvents(f, { profileId: p.body.data[0].id }, 1);
  t.same(ev.body.data.map((e: any) => e.event), ['Small'], 'only the small call landed');
});

t.test('rate limit: 429 with Retry-After, per write key', async (t) => {
  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const set = await call(s.url, 'PATCH', `/v1/orgs/${f.org.org.id}`, { token: s.operatorToken, body: { data: { limits: { ratePerSecond: 0.01, burst: 2 } } } });
  t.equal(set.status, 200);
  await new Promise((r) => setTimeout(r, 1100)); // limits are re-read within a second
  const body = { batch: [{ type: 'track', userId: 'u', event: 'E' }, { type: 'track', userId: 'u', event: 'E' }] };
  okAnswer(t, await seg('batch', body, { key: writeKey }), 'within the burst');
  const r = await seg('batch', body, { key: writeKey });
  refusedAnswer(t, r, 429, 'rate_limited', 'over the bucket');
  t.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
});

t.test('clock skew: the stored timestamp is receivedAt - (sentAt - timestamp)', async (t) => {
  const received = Date.parse('2026-03-01T12:00:00.000Z');
  const table: Array<[string, unknown, unknown, string | undefined]> = [
    ['client clock 1 h ahead', '2026-03-01T13:00:00.000Z', '2026-03-01T13:00:05.000Z', '2026-03-01T11:59:55.000Z'],
    ['client clock 1 day behind', '2026-02-28T11:00:00.000Z', '2026-02-28T12:00:00.000Z', '2026-03-01T11:00:00.000Z'],
    ['no sentAt: as given', '2026-01-01T00:00:00.000Z', undefined, '2026-01-01T00:00:00.000Z'],
    ['unparseable sentAt: as given', '2026-01-01T00:00:00.000Z', 'soon', '2026-01-01T00:00:00.000Z'],
    ['offset notation', '2026-03-01T14:00:00+02:00', '2026-03-01T12:00:00Z', '2026-03-01T12:00:00.000Z'],
    ['no timestamp: receivedAt (pipeline default)', undefined, '2026-03-01T12:00:00Z', undefined],
    ['unparseable timestamp', 'yesterday-ish', undefined, undefined],
    ['a number is not a date string but epoch ms', 0, undefined, '1970-01-01T00:00:00.000Z'],
    ['out of range after correction', '0001-01-01T00:00:00Z', '9999-01-01T00:00:00Z', undefined],
  ];
  for (const [what, ts, sent, want] of table) t.equal(correctedTimestamp(ts, sent, received), want, what);

  const f = await createAppFixture(s);
  const { writeKey } = await newKey(f);
  const user = uid('user');
  const skew = 3600_000; // the client's clock runs an hour ahead
  const before = Date.now();
  const clientNow = before + skew;
  const r = await seg('track', { userId: user, event: 'Skewed', timestamp: new Date(clientNow - 10_000).toISOString(), sentAt: new Date(clientNow).toISOString(), messageId: uid('m') }, { key: writeKey });
  const after = Date.now();
  okAnswer(t, r, 'skewed call');
  const p = await waitProfile(f, 'userId', user);
  const ev = await waitEvents(f, { profileId: p.body.data[0].id }, 1);
  const stored = Date.parse(ev.body.data[0].timestamp);
  t.ok(stored >= before - 10_000 - 5 && stored <= after - 10_000 + 5, `stored ${ev.body.data[0].timestamp} is 10 s before the server's receipt`);
});

t.test('the event stream carries the context (version 2 records) and still reads version 1 messages', async (t) => {
  const base = { id: 'evt_1', orgId: 'org_1', appId: 'app_1', sourceId: 'src_1', profileId: 'prf_1', environment: 'production' as const,
    event: 'E', properties: { a: 1 }, timestamp: '2026-01-01T00:00:00.000Z', receivedAt: '2026-01-01T00:00:01.000Z', messageId: 'm1' };
  const withContext = { ...base, id: 'evt_2', context: { library: { name: 'x' }, ip: '203.0.113.1' } };
  const [msg] = batchMessages([base, withContext].map(encodeEvent), 100, 1 << 20, EVENT_BATCH_MARK);
  t.equal(msg!.data[0], EVENT_BATCH_MARK);
  t.same(decodeEvents(msg!.data), [base, withContext], 'both round-trip; no context field when the call had none');
  t.notOk('context' in decodeEvents(msg!.data)[0]!);
  t.same(decodeEvents(batchMessages([encodeEventRecord(base)], 100, 1 << 20)[0]!.data), [base], 'a version 1 batch still decodes');
  t.same(decodeEvents(encodeEventRecord(base)), [base], 'a version 1 single record still decodes');
});

t.test('CORS policy: a configured list echoes only its origins', async (t) => {
  const any = corsPolicy('*');
  t.same(any(undefined), { 'access-control-allow-origin': '*' });
  t.same(any('https://a.example'), { 'access-control-allow-origin': 'https://a.example', vary: 'Origin' });
  const list = corsPolicy('https://a.example, https://b.example');
  t.same(list('https://b.example'), { 'access-control-allow-origin': 'https://b.example', vary: 'Origin' });
  t.same(list('https://evil.example'), {}, 'an origin not listed gets no CORS header');
  t.same(list(undefined), {});
});

t.test('the OpenAPI document describes the Segment routes and write keys', async (t) => {
  const doc = (await call(s.url, 'GET', '/openapi.json')).body;
  for (const p of ['/segment/v1/batch', '/segment/v1/b', '/segment/v1/t', '/segment/v1/identify', '/segment/v1/alias', '/segment/v1/m']) {
    t.ok(doc.paths[p]?.post, `POST ${p}`);
    t.ok(doc.paths[p]?.options, `OPTIONS ${p}`);
  }
  t.ok(doc.paths['/segment/v1/projects/{writeKey}/settings']?.get, 'settings');
  t.ok(doc.paths['/v1/sources/{id}/write-keys']?.post && doc.paths['/v1/sources/{id}/write-keys']?.get, 'write-key routes');
  t.ok(doc.paths['/v1/sources/{id}/write-keys/{keyId}']?.delete);
  t.ok(doc.components.securitySchemes.segmentWriteKey, 'the write-key scheme');
  t.ok(doc.paths['/segment/v1/track'].post.responses['400'], 'the 400 answer is documented');
});
