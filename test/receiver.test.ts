// Source webhook receiver (OpenAPI description): identity-provider user events signed with the Standard
// Webhooks / Svix scheme, applied as identify calls on the source's app; plain-text answers.
import t, { type Test } from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import { startServer, call, poll, createAppFixture, type AppFixture, type Res } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const uid = (p = 'x') => `${p}_${randomBytes(6).toString('hex')}`;
const newSecret = () => 'whsec_' + randomBytes(24).toString('base64');

interface Signed { headers: Record<string, string>; body: string }

/** Signs `body` the Standard Webhooks way: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`. */
function sign(secret: string, body: string, o: { id?: string; ts?: number; prefix?: 'svix' | 'webhook' } = {}): Signed {
  const id = o.id ?? `msg_${randomBytes(8).toString('hex')}`;
  const ts = String(o.ts ?? Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  const p = o.prefix ?? 'svix';
  return { body, headers: { [`${p}-id`]: id, [`${p}-timestamp`]: ts, [`${p}-signature`]: `v1,${sig}` } };
}

const post = (sourceId: string, m: Signed) =>
  call(s.url, 'POST', `/v1/sources/${sourceId}/webhook`, { raw: m.body, contentType: 'application/json', headers: m.headers });

const userEvent = (type: string, id: string, o: { email?: string; first?: string | null; last?: string | null } = {}) => JSON.stringify({
  type, object: 'event',
  data: {
    id, object: 'user',
    email_addresses: o.email ? [{ id: uid('idn'), email_address: o.email }] : [],
    first_name: o.first ?? null, last_name: o.last ?? null, created_at: Date.now(),
  },
});

interface Idp { f: AppFixture; source: any; secret: string }
async function idpSource(f?: AppFixture, secret: string | null = newSecret()): Promise<Idp> {
  const fx = f ?? await createAppFixture(s);
  const r = await call(s.url, 'POST', `/v1/apps/${fx.app.id}/sources`, {
    token: fx.admin, body: { data: { kind: 'idp', config: secret ? { signingSecret: secret } : {} } },
  });
  if (r.status !== 201) throw new Error(`idp source: ${r.status} ${r.text}`);
  return { f: fx, source: r.body.data, secret: secret ?? '' };
}

const lookup = (f: AppFixture, kind: string, value: string) =>
  call(s.url, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`, { token: f.admin });

function expectText(t: Test, r: Res, status: number, text: string, what: string) {
  t.equal(r.status, status, `${what}: status ${status} (${r.text.slice(0, 200)})`);
  t.equal(r.text, text, `${what}: body "${text}"`);
  t.match(r.headers.get('content-type') ?? '', /^text\/plain/, `${what}: plain text`);
}

t.test('user.created, user.updated, user.deleted', async (t) => {
  const idp = await idpSource();
  t.equal(idp.source.configured, true, 'secret stored');
  t.notOk('signingSecret' in (idp.source.config ?? {}), 'secret never returned');
  const user = uid('user');
  const email = `${uid('ann')}@example.com`;
  const r = await post(idp.source.id, sign(idp.secret, userEvent('user.created', user, { email, first: 'Ann', last: 'Lee' })));
  expectText(t, r, 200, 'ok', 'user.created');
  const l = await lookup(idp.f, 'idpId', user);
  t.equal(l.body?.data?.length, 1, 'a profile with the idpId');
  const p = l.body?.data?.[0];
  t.same((p?.identifiers ?? []).map((i: any) => `${i.kind}=${i.value}`).sort(), [`email=${email}`, `idpId=${user}`], 'idpId and email identifiers');
  t.same(p?.traits, { email, firstName: 'Ann', lastName: 'Lee' }, 'email, firstName, lastName traits');
  t.equal(p?.appId, idp.f.app.id, 'on the source\'s app');
  t.equal(p?.sourceId, idp.source.id, 'created through the idp source');
  t.equal(p?.anonymous, false);
  t.same((await lookup(idp.f, 'email', email)).body?.data?.map((x: any) => x.id), [p?.id], 'found by email too');

  const u = await post(idp.source.id, sign(idp.secret, userEvent('user.updated', user, { email, first: 'Annie', last: 'Lee-Park' })));
  expectText(t, u, 200, 'ok', 'user.updated');
  const p2 = (await lookup(idp.f, 'idpId', user)).body?.data?.[0];
  t.equal(p2?.id, p?.id, 'same profile');
  t.equal(p2?.traits?.firstName, 'Annie', 'firstName changed');
  t.equal(p2?.traits?.lastName, 'Lee-Park', 'lastName changed');

  const d = await post(idp.source.id, sign(idp.secret, JSON.stringify({ type: 'user.deleted', data: { id: user, deleted: true, object: 'user' } })));
  expectText(t, d, 200, 'ok', 'user.deleted');
  const p3 = (await lookup(idp.f, 'idpId', user)).body?.data?.[0];
  t.equal(p3?.id, p?.id, 'same profile');
  t.equal(p3?.traits?.deleted, true, 'trait deleted = true');
  t.equal(p3?.traits?.firstName, 'Annie', 'other traits kept');

  // The app's api source lands on the same profiles (all sources of an app share them).
  const viaApi = await call(s.url, 'POST', '/v1/identify', { token: idp.f.key, body: { data: { sourceId: idp.f.source.id, identifiers: { idpId: user } } } });
  t.equal(viaApi.body?.data?.id, p?.id, 'the api source finds the same profile');

  const src = await poll(() => call(s.url, 'GET', `/v1/sources/${idp.source.id}`, { token: idp.f.admin }), (x) => x.body?.data?.lastReceivedAt != null, 2500);
  t.ok(src.body?.data?.lastReceivedAt, 'the idp source\'s lastReceivedAt is set');
});

t.test('the webhook-* header names work too', async (t) => {
  const idp = await idpSource();
  const user = uid('user');
  const r = await post(idp.source.id, sign(idp.secret, userEvent('user.created', user, { email: `${uid('w')}@example.com`, first: 'W' }), { prefix: 'webhook' }));
  expectText(t, r, 200, 'ok', 'webhook-* headers');
  const p = (await lookup(idp.f, 'idpId', user)).body?.data?.[0];
  t.equal(p?.traits?.firstName, 'W', 'applied');
  // Several signatures in the header (key rotation): any valid one is enough.
  const body = userEvent('user.updated', user, { first: 'Rotated' });
  const m = sign(idp.secret, body);
  m.headers['svix-signature'] = `v1,${randomBytes(32).toString('base64')} ${m.headers['svix-signature']}`;
  expectText(t, await post(idp.source.id, m), 200, 'ok', 'one of several signatures valid');
  t.equal((await lookup(idp.f, 'idpId', user)).body?.data?.[0]?.traits?.firstName, 'Rotated');
});

t.test('bad signatures and timestamps are 401 invalid signature; nothing applied', async (t) => {
  const idp = await idpSource();
  const now = Math.floor(Date.now() / 1000);
  const cases: Array<[string, (user: string) => Signed]> = [
    ['signed with another secret', (u) => sign(newSecret(), userEvent('user.created', u))],
    ['body changed after signing', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); return { ...m, body: m.body.replace('"user.created"', '"user.updated"') }; }],
    ['id changed after signing', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); return { ...m, headers: { ...m.headers, 'svix-id': 'msg_other' } }; }],
    ['timestamp changed after signing', (u) => { const m = sign(idp.secret, userEvent('user.created', u), { ts: now }); return { ...m, headers: { ...m.headers, 'svix-timestamp': String(now - 1) } }; }],
    ['stale timestamp (6 min)', (u) => sign(idp.secret, userEvent('user.created', u), { ts: now - 360 })],
    ['stale timestamp (5 min + 30 s)', (u) => sign(idp.secret, userEvent('user.created', u), { ts: now - 330 })],
    ['timestamp 6 min in the future', (u) => sign(idp.secret, userEvent('user.created', u), { ts: now + 360 })],
    ['timestamp not a number', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); return { ...m, headers: { ...m.headers, 'svix-timestamp': 'yesterday' } }; }],
    ['no signature header', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); const h = { ...m.headers }; delete h['svix-signature']; return { ...m, headers: h }; }],
    ['no id header', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); const h = { ...m.headers }; delete h['svix-id']; return { ...m, headers: h }; }],
    ['no timestamp header', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); const h = { ...m.headers }; delete h['svix-timestamp']; return { ...m, headers: h }; }],
    ['no headers at all', (u) => ({ body: userEvent('user.created', u), headers: {} })],
    ['signature of another version', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); return { ...m, headers: { ...m.headers, 'svix-signature': m.headers['svix-signature']!.replace(/^v1,/, 'v2,') } }; }],
    ['garbage signature', (u) => { const m = sign(idp.secret, userEvent('user.created', u)); return { ...m, headers: { ...m.headers, 'svix-signature': 'v1,not-base64!!' } }; }],
  ];
  for (const [what, make] of cases) {
    const user = uid('user');
    expectText(t, await post(idp.source.id, make(user)), 401, 'invalid signature', what);
    t.same((await lookup(idp.f, 'idpId', user)).body?.data, [], `${what}: nothing applied`);
  }
  // Within the tolerance is fine.
  const user = uid('user');
  expectText(t, await post(idp.source.id, sign(idp.secret, userEvent('user.created', user), { ts: now - 240 })), 200, 'ok', '4 minutes old');
  t.equal((await lookup(idp.f, 'idpId', user)).body?.data?.length, 1, 'applied');
});

t.test('source without a secret, unknown source, archived source', async (t) => {
  const noSecret = await idpSource(undefined, null);
  t.equal(noSecret.source.configured, false);
  const user = uid('user');
  expectText(t, await post(noSecret.source.id, sign(newSecret(), userEvent('user.created', user))), 401, 'invalid signature', 'source without a secret');
  expectText(t, await post(noSecret.source.id, { body: userEvent('user.created', user), headers: {} }), 401, 'invalid signature', 'source without a secret, unsigned');
  t.same((await lookup(noSecret.f, 'idpId', user)).body?.data, [], 'nothing applied');
  // The api source has no secret either.
  expectText(t, await post(noSecret.f.source.id, sign(newSecret(), userEvent('user.created', user))), 401, 'invalid signature', 'api source');

  const idp = await idpSource();
  expectText(t, await post('src_doesnotexist0000', sign(idp.secret, userEvent('user.created', user))), 404, 'unknown source', 'unknown source');

  const del = await call(s.url, 'DELETE', `/v1/sources/${idp.source.id}`, { token: idp.f.admin });
  t.equal(del.status, 200, 'archived');
  expectText(t, await post(idp.source.id, sign(idp.secret, userEvent('user.created', user))), 403, 'source archived', 'archived source, valid signature');
  t.same((await lookup(idp.f, 'idpId', user)).body?.data, [], 'nothing applied');
});

t.test('malformed payloads are 400 bad payload', async (t) => {
  const idp = await idpSource();
  const cases: Array<[string, string]> = [
    ['not JSON', '{"type": "user.created", '],
    ['empty body', ''],
    ['missing data', JSON.stringify({ type: 'user.created' })],
    ['missing data.id', JSON.stringify({ type: 'user.created', data: { first_name: 'A', email_addresses: [] } })],
    ['empty data.id', JSON.stringify({ type: 'user.created', data: { id: '', first_name: 'A' } })],
    ['data.id not a string', JSON.stringify({ type: 'user.updated', data: { id: 42 } })],
    ['JSON array', JSON.stringify([{ type: 'user.created', data: { id: 'x' } }])],
  ];
  for (const [what, body] of cases) expectText(t, await post(idp.source.id, sign(idp.secret, body)), 400, 'bad payload', what);
});

t.test('a signed message id longer than 192 characters is 400 bad payload; 192 is accepted', async (t) => {
  const idp = await idpSource();
  const user = uid('user');
  expectText(t, await post(idp.source.id, sign(idp.secret, userEvent('user.created', user), { id: `msg_${'x'.repeat(189)}` })), 400, 'bad payload', 'id of 193');
  t.same((await lookup(idp.f, 'idpId', user)).body?.data, [], 'nothing applied');
  expectText(t, await post(idp.source.id, sign(idp.secret, userEvent('user.created', user), { id: `msg_${'x'.repeat(188)}` })), 200, 'ok', 'id of 192');
  t.equal((await lookup(idp.f, 'idpId', user)).body?.data?.length, 1, 'applied');
});

t.test('the same svix-id delivered twice is applied once', async (t) => {
  const idp = await idpSource();
  const user = uid('user');
  const id1 = `msg_${randomBytes(8).toString('hex')}`;
  const first = userEvent('user.updated', user, { first: 'First' });
  expectText(t, await post(idp.source.id, sign(idp.secret, first, { id: id1 })), 200, 'ok', 'first delivery');
  expectText(t, await post(idp.source.id, sign(idp.secret, userEvent('user.updated', user, { first: 'Second' }))), 200, 'ok', 'a later message');
  t.equal((await lookup(idp.f, 'idpId', user)).body?.data?.[0]?.traits?.firstName, 'Second');
  // The provider retries the first message (same id, fresh timestamp and signature).
  expectText(t, await post(idp.source.id, sign(idp.secret, first, { id: id1 })), 200, 'ok', 'redelivery answers ok');
  const p = (await lookup(idp.f, 'idpId', user)).body?.data;
  t.equal(p?.length, 1, 'one profile');
  t.equal(p?.[0]?.traits?.firstName, 'Second', 'the redelivery was not applied again');
  // Concurrent duplicate deliveries of a new message: one profile, applied once.
  const user2 = uid('user');
  const id2 = `msg_${randomBytes(8).toString('hex')}`;
  const body2 = userEvent('user.created', user2, { email: `${uid('c')}@example.com`, first: 'Conc' });
  const rs = await Promise.all(Array.from({ length: 5 }, () => post(idp.source.id, sign(idp.secret, body2, { id: id2 }))));
  t.same(rs.map((r) => [r.status, r.text]), Array.from({ length: 5 }, () => [200, 'ok']), 'every delivery answers ok');
  t.equal((await lookup(idp.f, 'idpId', user2)).body?.data?.length, 1, 'one profile');
});

t.test('a receiver write is visible in the next read of its source and app', async (t) => {
  const idp = await idpSource();
  t.equal(idp.source.lastReceivedAt, null, 'null before any call');
  const before = Date.now();
  expectText(t, await post(idp.source.id, sign(idp.secret, userEvent('user.created', uid('user'), { email: `${uid('v')}@example.com` }))), 200, 'ok', 'created');
  const src = await call(s.url, 'GET', `/v1/sources/${idp.source.id}`, { token: idp.f.admin });
  t.ok(Date.parse(src.body.data.lastReceivedAt) >= before - 1000, `source lastReceivedAt at once (${src.body.data.lastReceivedAt})`);
  const app = await call(s.url, 'GET', `/v1/apps/${idp.f.app.id}`, { token: idp.f.admin });
  t.ok(Date.parse(app.body.data.lastReceivedAt) >= before - 1000, `app lastReceivedAt at once (${app.body.data.lastReceivedAt})`);
  // A refused call (bad signature) is no write.
  const other = await idpSource(idp.f);
  t.equal((await post(other.source.id, sign(newSecret(), userEvent('user.created', uid('user'))))).status, 401);
  t.equal((await call(s.url, 'GET', `/v1/sources/${other.source.id}`, { token: idp.f.admin })).body.data.lastReceivedAt, null, 'a refused call sets nothing');
});
