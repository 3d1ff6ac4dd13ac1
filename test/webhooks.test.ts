// Outbound webhooks: the registry routes (auth, validation, names, secrets shown once), the test
// send, and delivery per Standard Webhooks (signatures checked by the independent standardwebhooks
// package), retries, Retry-After, redirects, timeouts, auto-disable and re-enable. Private
// targets are allowed on this server (the receivers are on 127.0.0.1); the guard has its own file.
import t, { type Test } from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { startServer, call, createOrg, expectError, poll, type OrgCreds } from './helpers/server.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { enqueueWebhookDelivery } from '../journeys/webhooks/mod.js';
import { dbEnv, ownDatabase, tellAsAnotherProcess } from './helpers/db.js';
import { webhookMarkers } from './helpers/outbox.js';

const dbUrl = await ownDatabase(t);
const s = await startServer([
  '--webhook-allow-private', '--webhook-attempts', '4', '--webhook-backoff-ms', '100', '--webhook-disable-after', '3',
  '--webhook-timeout-ms', '1000', '--webhook-poll-ms', '50',
], dbEnv(dbUrl));
t.teardown(() => s.close());

const pool = dbUrl ? new pg.Pool({ connectionString: dbUrl, max: 2 })
  : s.dataDir ? new pg.Pool({ host: join(s.dataDir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 2 }) : undefined;
if (pool) t.teardown(() => pool.end());

const api = (token: string) => (method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token, body: data === undefined ? undefined : { data } });

async function receiverFor(t: Test, respond?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(respond);
  t.teardown(() => r.close());
  return r;
}

async function hook(org: OrgCreds, url: string, name = `hook-${Math.random().toString(36).slice(2, 8)}`) {
  const r = await api(org.sessions.admin)('POST', '/v1/webhooks', { name, config: { url } });
  if (r.status !== 201) throw new Error(`webhook create: ${r.status} ${r.text}`);
  return r.body.data;
}

const deliveries = async (org: OrgCreds, id: string) => (await api(org.sessions.admin)('GET', `/v1/webhooks/${id}/deliveries?limit=100`)).body.data as any[];
const deliveryOf = async (org: OrgCreds, hookId: string, id: string) => (await deliveries(org, hookId)).find((d) => d.id === id);
/** Polls until the delivery leaves `pending`. */
const settled = (org: OrgCreds, hookId: string, id: string, timeoutMs = 15_000) =>
  poll(() => deliveryOf(org, hookId, id), (d) => !!d && d.status !== 'pending', timeoutMs, 50);
const sendTest = async (org: OrgCreds, hookId: string, payload?: Record<string, unknown>) => {
  const r = await api(org.sessions.admin)('POST', `/v1/webhooks/${hookId}/test`, payload === undefined ? {} : { payload });
  if (r.status !== 202) throw new Error(`test send: ${r.status} ${r.text}`);
  return r.body.data;
};

t.test('create shows the secret once; fetch, list, q, pagination, patch, delete', async (t) => {
  const org = await createOrg(s);
  const a = api(org.sessions.admin);
  const c = await a('POST', '/v1/webhooks', { name: 'CRM sync', config: { url: 'https://crm.example.com/hooks?x=1' } });
  t.equal(c.status, 201, c.text);
  const w = c.body.data;
  t.match(w, { orgId: org.org.id, name: 'CRM sync', config: { url: 'https://crm.example.com/hooks?x=1' }, webhookPayloadVersion: 1, disabledAt: null });
  t.match(w.signingSecret, /^whsec_[A-Za-z0-9+/]+=*$/, 'whsec_ + base64');
  t.ok(Buffer.from(w.signingSecret.slice(6), 'base64').length >= 24, 'at least 24 random bytes');
  t.type(w.createdAt, 'string');

  const g = await a('GET', `/v1/webhooks/${w.id}`);
  t.equal(g.status, 200);
  t.notOk('signingSecret' in g.body.data, 'fetch never shows the secret');
  const { signingSecret, ...rest } = w;
  t.same(g.body.data, rest, 'fetch answers the created webhook');
  t.notOk(g.text.includes(signingSecret.slice(6)), 'secret absent from the fetch answer');

  const second = await hook(org, 'http://b.example.com/', 'billing');
  const l = await a('GET', '/v1/webhooks?limit=1');
  t.equal(l.status, 200);
  t.same(l.body.data.map((x: any) => x.id), [second.id], 'newest first');
  t.equal(l.body.meta.hasMore, true);
  const l2 = await a('GET', `/v1/webhooks?limit=1&cursor=${l.body.meta.nextCursor}`);
  t.same(l2.body.data.map((x: any) => x.id), [w.id], 'second page');
  t.equal(l2.body.meta.hasMore, false);
  t.notOk(l.text.includes('signingSecret') || l2.text.includes('signingSecret'), 'lists never show secrets');
  const q = await a('GET', '/v1/webhooks?q=crm%20SY');
  t.same(q.body.data.map((x: any) => x.id), [w.id], 'q: case-insensitive substring');
  const q2 = await a('GET', '/v1/webhooks?q=%25');
  t.same(q2.body.data, [], 'q: % is a plain character');

  const member = await api(org.sessions.member)('GET', '/v1/webhooks');
  t.equal(member.status, 200, 'members may read');
  t.equal(member.body.data.length, 2);

  const p = await a('PATCH', `/v1/webhooks/${w.id}`, { name: 'CRM', config: { url: 'http://crm2.example.com/in' } });
  t.equal(p.status, 200, p.text);
  t.match(p.body.data, { id: w.id, name: 'CRM', config: { url: 'http://crm2.example.com/in' }, disabledAt: null });
  t.notOk('signingSecret' in p.body.data);
  t.ok(p.body.data.updatedAt >= w.updatedAt);
  const off = await a('PATCH', `/v1/webhooks/${w.id}`, { enabled: false });
  t.type(off.body.data.disabledAt, 'string', 'enabled: false disables');
  const again = await a('PATCH', `/v1/webhooks/${w.id}`, { enabled: false });
  t.equal(again.body.data.disabledAt, off.body.data.disabledAt, 'disabling twice keeps the first disabledAt');
  const on = await a('PATCH', `/v1/webhooks/${w.id}`, { enabled: true });
  t.equal(on.body.data.disabledAt, null, 'enabled: true resumes');
  const none = await a('PATCH', `/v1/webhooks/${w.id}`, {});
  t.equal(none.status, 200, 'an empty patch is allowed');

  expectError(t, await a('POST', '/v1/webhooks', { name: 'billing', config: { url: 'http://x.example.com/' } }), 409, 'conflict', 'duplicate name on create');
  expectError(t, await a('PATCH', `/v1/webhooks/${w.id}`, { name: 'billing' }), 409, 'conflict', 'duplicate name on patch');
  const other = await createOrg(s);
  t.equal((await api(other.sessions.admin)('POST', '/v1/webhooks', { name: 'billing', config: { url: 'http://x.example.com/' } })).status, 201, 'names are unique per org only');

  const d = await a('DELETE', `/v1/webhooks/${w.id}`);
  t.equal(d.status, 200);
  t.same(d.body.data, { deleted: true });
  expectError(t, await a('GET', `/v1/webhooks/${w.id}`), 404, 'not_found', 'gone after delete');
  expectError(t, await a('DELETE', `/v1/webhooks/${w.id}`), 404, 'not_found', 'delete twice');
});

t.test('the secret is stored encrypted, never in clear', { skip: !pool && 'no direct database access' }, async (t) => {
  const org = await createOrg(s);
  const w = await hook(org, 'http://x.example.com/');
  const row = (await pool!.query('SELECT * FROM webhooks WHERE id = $1', [w.id])).rows[0];
  const text = JSON.stringify(row);
  t.notOk(text.includes(w.signingSecret.slice(6)), 'the base64 secret appears in no column');
  t.notOk(text.includes(Buffer.from(w.signingSecret.slice(6), 'base64').toString('hex')), 'nor its bytes in hex');
  t.match(row.secret_enc, /^v1:/, 'an encrypted blob');
});

t.test('a URL password is a secret: masked in every answer, stored encrypted, sent as Basic auth', async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t);
  const password = 'hunter2-S3cret%/x';
  const withPass = `http://bob:${encodeURIComponent(password)}@${rcv.url.slice('http://'.length)}/in`;
  const masked = `http://bob:***@${rcv.url.slice('http://'.length)}/in`;
  const created = await api(org.sessions.admin)('POST', '/v1/webhooks', { name: 'basic', config: { url: withPass } });
  t.equal(created.status, 201);
  t.equal(created.body.data.config.url, masked, 'create answers the URL masked');
  const id = created.body.data.id;
  rcv.secret = created.body.data.signingSecret;
  for (const [who, token] of [['admin', org.sessions.admin], ['member', org.sessions.member]] as const) {
    const one = await api(token)('GET', `/v1/webhooks/${id}`);
    t.equal(one.body.data.config.url, masked, `${who} fetch: masked`);
    const list = await api(token)('GET', '/v1/webhooks');
    t.equal(list.body.data[0].config.url, masked, `${who} list: masked`);
    t.notOk(list.text.includes('hunter2'), `${who}: the password is in no answer`);
  }
  if (pool) {
    const row = (await pool.query('SELECT * FROM webhooks WHERE id = $1', [id])).rows[0];
    t.notOk(JSON.stringify(row).includes('hunter2'), 'the password is stored in no column in clear');
    t.match(row.url_password_enc, /^v1:/, 'it is an encrypted blob');
  }
  // The receiver gets the real password as Basic auth.
  const d = await sendTest(org, id);
  t.match(await settled(org, id, d.id), { status: 'succeeded' }, 'delivered');
  t.equal(rcv.hits.at(-1)?.authorization, `Basic ${Buffer.from(`bob:${password}`).toString('base64')}`, 'Basic auth with the stored password');
  // A config round trip (the mask sent back) keeps the password; a rename answers masked too.
  const renamed = await api(org.sessions.admin)('PATCH', `/v1/webhooks/${id}`, { name: 'basic2', config: { url: masked } });
  t.equal(renamed.status, 200);
  t.equal(renamed.body.data.config.url, masked, 'patch answers masked');
  const d2 = await sendTest(org, id);
  await settled(org, id, d2.id);
  t.equal(rcv.hits.at(-1)!.authorization, `Basic ${Buffer.from(`bob:${password}`).toString('base64')}`, 'the mask kept the stored password');
  // A URL without a password drops it.
  const plain = await api(org.sessions.admin)('PATCH', `/v1/webhooks/${id}`, { config: { url: `${rcv.url}/in` } });
  t.equal(plain.body.data.config.url, `${rcv.url}/in`, 'no password, nothing masked');
  const d3 = await sendTest(org, id);
  await settled(org, id, d3.id);
  t.equal(rcv.hits.at(-1)!.authorization, '', 'no Basic auth any more');
});

t.test('auth: 401, deploy key 403 deploy_key_scope, member 403 on mutations, other org 404', async (t) => {
  const org = await createOrg(s);
  const w = await hook(org, 'http://x.example.com/');
  const paths: Array<[string, string, unknown?]> = [
    ['POST', '/v1/webhooks', { name: 'n', config: { url: 'http://x.example.com/' } }], ['GET', '/v1/webhooks'], ['GET', `/v1/webhooks/${w.id}`],
    ['PATCH', `/v1/webhooks/${w.id}`, { enabled: false }], ['DELETE', `/v1/webhooks/${w.id}`], ['POST', `/v1/webhooks/${w.id}/test`, {}],
    ['GET', `/v1/webhooks/${w.id}/deliveries`],
  ];
  for (const [m, p, data] of paths) {
    expectError(t, await call(s.url, m, p, { body: data === undefined ? undefined : { data } }), 401, 'invalid_key', `${m} ${p} without a bearer`);
    expectError(t, await api(org.apiKey)(m, p, data), 401, 'invalid_key', `${m} ${p} with the API key`);
    expectError(t, await api(org.deployKey)(m, p, data), 403, 'deploy_key_scope', `${m} ${p} with the deploy key`);
  }
  for (const [m, p, data] of paths.filter(([m]) => m !== 'GET')) {
    expectError(t, await api(org.sessions.member)(m, p, data), 403, 'forbidden', `${m} ${p} as a member`);
  }
  const other = await createOrg(s);
  for (const [m, p, data] of paths.filter(([, p]) => p !== '/v1/webhooks')) {
    expectError(t, await api(other.sessions.admin)(m, p, data), 404, 'not_found', `${m} ${p} from another org`);
  }
  t.equal((await api(org.sessions.admin)('GET', `/v1/webhooks/${w.id}`)).body.data.disabledAt, null, 'nothing changed');
});

t.test('bad input gets 4xx envelopes', async (t) => {
  const org = await createOrg(s);
  const w = await hook(org, 'http://x.example.com/');
  const deep = (n: number): unknown => (n === 0 ? {} : { a: deep(n - 1) });
  const cases: Array<{ what: string; m: string; p: string; raw?: string; data?: unknown; status: number; code: string; names?: string }> = [
    { what: 'name missing', m: 'POST', p: '/v1/webhooks', data: { config: { url: 'http://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'name empty', m: 'POST', p: '/v1/webhooks', data: { name: '', config: { url: 'http://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'name too long', m: 'POST', p: '/v1/webhooks', data: { name: 'x'.repeat(101), config: { url: 'http://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'name a number', m: 'POST', p: '/v1/webhooks', data: { name: 7, config: { url: 'http://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'name with NUL', m: 'POST', p: '/v1/webhooks', data: { name: 'a\u0000b', config: { url: 'http://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'config missing', m: 'POST', p: '/v1/webhooks', data: { name: 'n' }, status: 422, code: 'validation_failed', names: '/data/config' },
    { what: 'url missing', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: {} }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'ftp url', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 'ftp://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'javascript url', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 'javascript:alert(1)' } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'file url', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 'file:///etc/passwd' } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'not a url', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 'hello' } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'url with NUL', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 'http://a.example.com/\u0000' } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'url a number', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 5 } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'no data wrapper', m: 'POST', p: '/v1/webhooks', raw: '{"name":"n"}', status: 400, code: 'malformed_request' },
    { what: 'not JSON', m: 'POST', p: '/v1/webhooks', raw: '{"data":', status: 400, code: 'malformed_request' },
    { what: 'deep body', m: 'POST', p: '/v1/webhooks', data: { name: 'n', config: { url: 'http://a.example.com/' }, x: deep(80) }, status: 422, code: 'validation_failed' },
    { what: 'patch config without url', m: 'PATCH', p: `/v1/webhooks/${w.id}`, data: { config: {} }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'patch enabled a string', m: 'PATCH', p: `/v1/webhooks/${w.id}`, data: { enabled: 'yes' }, status: 422, code: 'validation_failed', names: '/data/enabled' },
    { what: 'patch name null', m: 'PATCH', p: `/v1/webhooks/${w.id}`, data: { name: null }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'patch name NUL', m: 'PATCH', p: `/v1/webhooks/${w.id}`, data: { name: '\u0000' }, status: 422, code: 'validation_failed', names: '/data/name' },
    { what: 'patch http url to gopher', m: 'PATCH', p: `/v1/webhooks/${w.id}`, data: { config: { url: 'gopher://a.example.com/' } }, status: 422, code: 'validation_failed', names: '/data/config/url' },
    { what: 'test payload an array', m: 'POST', p: `/v1/webhooks/${w.id}/test`, data: { payload: [1] }, status: 422, code: 'validation_failed', names: '/data/payload' },
    { what: 'test payload a string', m: 'POST', p: `/v1/webhooks/${w.id}/test`, data: { payload: 'x' }, status: 422, code: 'validation_failed', names: '/data/payload' },
    { what: 'test payload deep', m: 'POST', p: `/v1/webhooks/${w.id}/test`, data: { payload: deep(100) }, status: 422, code: 'validation_failed' },
    { what: 'test data not an object', m: 'POST', p: `/v1/webhooks/${w.id}/test`, data: 3, status: 422, code: 'validation_failed' },
    { what: 'q too long', m: 'GET', p: `/v1/webhooks?q=${'x'.repeat(201)}`, status: 422, code: 'validation_failed', names: '/q' },
    { what: 'q with NUL', m: 'GET', p: '/v1/webhooks?q=a%00b', status: 422, code: 'validation_failed', names: '/q' },
    { what: 'limit 0', m: 'GET', p: '/v1/webhooks?limit=0', status: 422, code: 'validation_failed', names: '/limit' },
    { what: 'limit huge', m: 'GET', p: '/v1/webhooks?limit=99999999999999999999', status: 422, code: 'validation_failed', names: '/limit' },
    { what: 'forged cursor', m: 'GET', p: '/v1/webhooks?cursor=abc', status: 422, code: 'validation_failed', names: '/cursor' },
    { what: 'cursor holding NUL', m: 'GET', p: `/v1/webhooks/${w.id}/deliveries?cursor=${Buffer.from(JSON.stringify('a\u0000')).toString('base64url')}`, status: 422, code: 'validation_failed', names: '/cursor' },
    { what: 'id with NUL', m: 'GET', p: '/v1/webhooks/whk%00x', status: 422, code: 'validation_failed', names: '/id' },
    { what: 'deliveries of an id with NUL', m: 'GET', p: '/v1/webhooks/%00/deliveries', status: 422, code: 'validation_failed', names: '/id' },
    { what: 'patch an id with NUL', m: 'PATCH', p: '/v1/webhooks/%00', data: { enabled: true }, status: 422, code: 'validation_failed', names: '/id' },
    { what: 'delete an id with NUL', m: 'DELETE', p: '/v1/webhooks/%00', status: 422, code: 'validation_failed', names: '/id' },
    { what: 'test an id with NUL', m: 'POST', p: '/v1/webhooks/%00/test', data: {}, status: 422, code: 'validation_failed', names: '/id' },
  ];
  for (const c of cases) {
    const r = c.raw !== undefined
      ? await call(s.url, c.m, c.p, { token: org.sessions.admin, raw: c.raw, contentType: 'application/json' })
      : await api(org.sessions.admin)(c.m, c.p, c.data);
    expectError(t, r, c.status, c.code, c.what, c.names);
  }
  // A lone surrogate is not an error of the caller's making that Postgres would refuse: it must not 500.
  const lone = await call(s.url, 'POST', '/v1/webhooks', { token: org.sessions.admin, raw: '{"data":{"name":"x\\ud800y","config":{"url":"http://a.example.com/"}}}', contentType: 'application/json' });
  t.ok(lone.status === 201 || (lone.status >= 400 && lone.status < 500), `lone surrogate answered ${lone.status}`);
  const list = await api(org.sessions.admin)('GET', '/v1/webhooks');
  t.equal(list.status, 200, 'the registry still lists');
});

t.test('a test send is delivered once, signed per Standard Webhooks', async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t);
  const w = await hook(org, `${rcv.url}/in?src=hw`);
  rcv.secret = w.signingSecret;
  const d = await sendTest(org, w.id, { hello: 'world', n: 1, nested: { a: [1, 2] } });
  t.match(d, { webhookId: w.id, executionId: null, status: 'pending', attempts: 0, lastStatusCode: null, lastError: null });
  const done = await settled(org, w.id, d.id);
  t.match(done, { id: d.id, status: 'succeeded', attempts: 1, lastStatusCode: 200, lastError: null });
  t.equal(rcv.hits.length, 1, 'one request');
  const h = rcv.hits[0]!;
  t.equal(h.verified, true, 'standardwebhooks verifies the signature');
  t.equal(h.id, d.id, 'webhook-id is the delivery id');
  t.equal(h.path, '/in?src=hw', 'path and query kept');
  t.match(h.timestamp, /^\d{10}$/, 'webhook-timestamp in Unix seconds');
  t.match(h.signature, /^v1,[A-Za-z0-9+/]+=*$/);
  t.same(h.json, { v: 1, id: d.id, type: 'webhook.test', timestamp: d.createdAt, data: { hello: 'world', n: 1, nested: { a: [1, 2] } } }, 'payload { v, id, type, timestamp, data }');
  const plain = await sendTest(org, w.id);
  await settled(org, w.id, plain.id);
  t.same(rcv.hits[1]!.json.data, {}, 'payload defaults to {}');
});

t.test('a host name is resolved and the request connects to the checked address', async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t);
  const w = await hook(org, `http://localhost:${rcv.port}/named`);
  rcv.secret = w.signingSecret;
  const d = await settled(org, w.id, (await sendTest(org, w.id)).id);
  t.match(d, { status: 'succeeded', attempts: 1, lastStatusCode: 200 }, d.lastError ?? '');
  t.equal(rcv.hits.length, 1);
  t.equal(rcv.hits[0]!.path, '/named');
  t.equal(rcv.hits[0]!.verified, true);
  const bad = await hook(org, 'http://no-such-host.invalid/');
  const f = await settled(org, bad.id, (await sendTest(org, bad.id)).id);
  t.match(f, { status: 'failed', attempts: 4, lastStatusCode: null });
  t.match(f.lastError, /cannot resolve no-such-host\.invalid/, 'an unresolvable host is a failed attempt, retried');
});

t.test('retries back off exponentially with the same webhook-id, then succeed', async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t, (_h, n) => ({ status: n < 3 ? 500 : 204 }));
  const w = await hook(org, rcv.url);
  rcv.secret = w.signingSecret;
  const d = await sendTest(org, w.id, { k: 1 });
  const done = await settled(org, w.id, d.id);
  t.match(done, { status: 'succeeded', attempts: 4, lastStatusCode: 204, lastError: null });
  t.equal(rcv.hits.length, 4, 'four attempts');
  t.same([...new Set(rcv.hits.map((h) => h.id))], [d.id], 'one webhook-id across retries');
  t.ok(rcv.hits.every((h) => h.verified), 'every attempt is signed');
  t.ok(rcv.hits.every((h) => h.body === rcv.hits[0]!.body), 'the same body every time');
  const gaps = rcv.hits.slice(1).map((h, i) => h.at - rcv.hits[i]!.at);
  t.ok(gaps[1]! > gaps[0]! && gaps[2]! > gaps[1]!, `spacing grows: ${gaps.join(', ')} ms`);
});

t.test('a delivery fails after the configured attempts; 3xx is a failure and redirects are not followed', async (t) => {
  const org = await createOrg(s);
  const target = await receiverFor(t);
  const rcv = await receiverFor(t, () => ({ status: 302, headers: { location: `${target.url}/private` } }));
  const w = await hook(org, rcv.url);
  const d = await sendTest(org, w.id);
  const done = await settled(org, w.id, d.id);
  t.match(done, { status: 'failed', attempts: 4, lastStatusCode: 302 });
  t.match(done.lastError, /302.*redirects are not followed/);
  t.equal(rcv.hits.length, 4);
  t.equal(target.hits.length, 0, 'the redirect target (127.0.0.1) is never reached');

  const err = await receiverFor(t, () => ({ status: 500 }));
  const w2 = await hook(org, err.url);
  const d2 = await settled(org, w2.id, (await sendTest(org, w2.id)).id);
  t.match(d2, { status: 'failed', attempts: 4, lastStatusCode: 500 });
  t.match(d2.lastError, /500/);
});

t.test('Retry-After on 429 and 503 is honoured', async (t) => {
  const org = await createOrg(s);
  for (const status of [429, 503]) {
    const rcv = await receiverFor(t, (_h, n) => (n === 0 ? { status, headers: { 'retry-after': '1' } } : { status: 200 }));
    const w = await hook(org, rcv.url);
    const d = await settled(org, w.id, (await sendTest(org, w.id)).id);
    t.match(d, { status: 'succeeded', attempts: 2 });
    const gap = rcv.hits[1]!.at - rcv.hits[0]!.at;
    t.ok(gap >= 950, `${status}: the second attempt waited for Retry-After (${gap} ms; backoff alone is ~100 ms)`);
  }
});

t.test('a receiver that never answers times out (a failed attempt) and does not hold up another webhook', async (t) => {
  const org = await createOrg(s);
  const dead = await receiverFor(t, () => 'hang');
  const fast = await receiverFor(t);
  const slow = await hook(org, dead.url);
  const ok = await hook(org, fast.url);
  const stuck = await sendTest(org, slow.id);
  const quick = await Promise.all([1, 2, 3].map(() => sendTest(org, ok.id)));
  for (const q of quick) t.match(await settled(org, ok.id, q.id), { status: 'succeeded', attempts: 1 });
  t.equal((await deliveryOf(org, slow.id, stuck.id)).status, 'pending', 'the hanging one is still being tried meanwhile');
  const done = await settled(org, slow.id, stuck.id, 20_000);
  t.match(done, { status: 'failed', attempts: 4, lastStatusCode: null });
  t.match(done.lastError, /timed out after 1000 ms/);
});

t.test('auto-disable after consecutive failed deliveries; skipped_disabled; re-enable resets', async (t) => {
  const org = await createOrg(s);
  let up = false;
  const rcv = await receiverFor(t, () => ({ status: up ? 200 : 500 }));
  const w = await hook(org, rcv.url);
  const a = api(org.sessions.admin);
  const first = await Promise.all([1, 2, 3].map(() => sendTest(org, w.id)));
  for (const d of first) t.match(await settled(org, w.id, d.id), { status: 'failed', attempts: 4 });
  const off = await poll(() => a('GET', `/v1/webhooks/${w.id}`), (r) => r.body.data.disabledAt !== null, 5000, 50);
  t.type(off.body.data.disabledAt, 'string', 'disabled after 3 failed deliveries');
  const hits = rcv.hits.length;
  const skipped = await sendTest(org, w.id);
  t.match(skipped, { status: 'skipped_disabled', attempts: 0, lastError: 'the webhook is disabled' }, 'recorded skipped_disabled at once');
  // A later delivery of another (enabled) webhook of the org arrives: the sender has been past the skipped one.
  const other = await receiverFor(t);
  t.ok((await webhookMarkers(s, org.sessions.admin, (await hook(org, other.url)).id, other)).arrived, 'a later delivery arrived');
  t.equal(rcv.hits.length, hits, 'nothing sent while disabled');
  t.equal((await deliveryOf(org, w.id, skipped.id)).status, 'skipped_disabled', 'and it stays skipped');

  up = true;
  const on = await a('PATCH', `/v1/webhooks/${w.id}`, { enabled: true });
  t.equal(on.body.data.disabledAt, null, 're-enabled');
  const d = await settled(org, w.id, (await sendTest(org, w.id)).id);
  t.match(d, { status: 'succeeded', attempts: 1 });
  // The count was reset: two more failed deliveries do not disable it again (the threshold is 3).
  up = false;
  for (const x of await Promise.all([1, 2].map(() => sendTest(org, w.id)))) await settled(org, w.id, x.id);
  t.equal((await a('GET', `/v1/webhooks/${w.id}`)).body.data.disabledAt, null, 'two failures after re-enable: still enabled');
});

t.test('a success between failures resets the count', async (t) => {
  const org = await createOrg(s);
  let status = 500;
  const rcv = await receiverFor(t, () => ({ status }));
  const w = await hook(org, rcv.url);
  for (const st of [500, 500, 200, 500, 500]) {
    status = st;
    await settled(org, w.id, (await sendTest(org, w.id)).id);
  }
  t.equal((await api(org.sessions.admin)('GET', `/v1/webhooks/${w.id}`)).body.data.disabledAt, null, 'never 3 failures in a row');
});

t.test('disabling skips waiting deliveries: they are never sent', async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t, () => ({ status: 503, headers: { 'retry-after': '3600' } }));
  const w = await hook(org, rcv.url);
  const d = await sendTest(org, w.id);
  await poll(() => deliveryOf(org, w.id, d.id), (x) => x.attempts === 1, 5000, 50);
  const a = api(org.sessions.admin);
  await a('PATCH', `/v1/webhooks/${w.id}`, { enabled: false });
  t.match(await deliveryOf(org, w.id, d.id), { status: 'skipped_disabled', attempts: 1, lastStatusCode: 503 });
  await a('PATCH', `/v1/webhooks/${w.id}`, { enabled: true });
  t.equal((await deliveryOf(org, w.id, d.id)).status, 'skipped_disabled', 're-enabling does not revive it');
  t.equal(rcv.hits.length, 1);
});

t.test('deliveries list: newest first, cursor pagination; delete takes them along', async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t);
  const w = await hook(org, rcv.url);
  const sent = [];
  for (let i = 0; i < 3; i++) sent.push(await sendTest(org, w.id, { i }));
  const a = api(org.sessions.admin);
  const p1 = await a('GET', `/v1/webhooks/${w.id}/deliveries?limit=2`);
  t.equal(p1.status, 200);
  t.same(p1.body.data.map((x: any) => x.id), [sent[2].id, sent[1].id], 'newest first');
  t.equal(p1.body.meta.hasMore, true);
  const p2 = await a('GET', `/v1/webhooks/${w.id}/deliveries?limit=2&cursor=${p1.body.meta.nextCursor}`);
  t.same(p2.body.data.map((x: any) => x.id), [sent[0].id]);
  t.equal(p2.body.meta.hasMore, false);
  t.same(Object.keys(p1.body.data[0]).sort(), ['attempts', 'createdAt', 'executionId', 'id', 'lastError', 'lastStatusCode', 'status', 'updatedAt', 'webhookId']);
  t.equal((await api(org.sessions.member)('GET', `/v1/webhooks/${w.id}/deliveries`)).status, 200, 'members may read deliveries');
  await a('DELETE', `/v1/webhooks/${w.id}`);
  expectError(t, await a('GET', `/v1/webhooks/${w.id}/deliveries`), 404, 'not_found', 'deliveries of a deleted webhook');
});

t.test('journey enqueue by name: idempotent on the key, not_found for an unknown name', { skip: !pool && 'no direct database access' }, async (t) => {
  const org = await createOrg(s);
  const rcv = await receiverFor(t);
  const w = await hook(org, rcv.url, 'crm');
  rcv.secret = w.signingSecret;
  const req = { orgId: org.org.id, webhookName: 'crm', executionId: 'exe_1', key: 'exe_1:3', payload: { profileId: 'p1' } };
  const a = await enqueueWebhookDelivery(pool!, req);
  const b = await enqueueWebhookDelivery(pool!, req);
  t.ok(a.ok && b.ok);
  if (!a.ok || !b.ok) return;
  t.equal(a.created, true);
  t.equal(b.created, false, 'the repeat finds the first');
  t.equal(b.delivery.id, a.delivery.id, 'one delivery per key');
  t.same(await enqueueWebhookDelivery(pool!, { ...req, webhookName: 'nope', key: 'exe_1:4' }), { ok: false, error: 'not_found' });
  const other = await createOrg(s);
  t.same(await enqueueWebhookDelivery(pool!, { ...req, orgId: other.org.id }), { ok: false, error: 'not_found' }, 'names are per org');
  // Enqueued behind the server's back, as another process would, and the server woken as that
  // process would (docs/journeys-runtime.md, "Idle"). An embedded server is its database's only
  // user: enabling the (already enabled) webhook wakes its sender. On PostgreSQL: NOTIFY.
  if (s.databaseUrl) await tellAsAnotherProcess(s.databaseUrl, 'webhooks');
  else t.equal((await call(s.url, 'PATCH', `/v1/webhooks/${w.id}`, { token: org.sessions.admin, body: { data: { enabled: true } } })).status, 200);
  const done = await settled(org, w.id, a.delivery.id);
  t.match(done, { status: 'succeeded', executionId: 'exe_1' });
  const marker = await webhookMarkers(s, org.sessions.admin, w.id, rcv);
  t.ok(marker.arrived, 'a later delivery arrived');
  t.equal(rcv.hits.filter((h) => !marker.ids.includes(h.id)).length, 1, 'sent once');
  t.equal(rcv.hits[0]!.verified, true);
  t.match(rcv.hits[0]!.json, { v: 1, id: a.delivery.id, type: 'journey.webhook', data: { profileId: 'p1' } });
});
