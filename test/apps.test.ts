// Apps and sources (OpenAPI document: "Apps", "Sources"): creation defaults, name
// limits, listing with cursor pagination, search and status filters, renaming and archiving, and the
// write-only source signing secret.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startServer, call, clockPast, createOrg, randomName, expectError, type OrgCreds } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const isDateTime = (v: unknown) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v));
const APP_FIELDS = ['archivedAt', 'createdAt', 'environment', 'id', 'lastReceivedAt', 'name', 'orgId', 'sourceCount', 'status', 'updatedAt'];
const SOURCE_FIELDS = ['appId', 'archivedAt', 'config', 'configured', 'createdAt', 'id', 'kind', 'lastReceivedAt', 'orgId', 'updatedAt'];

const org = await createOrg(s);
const admin = org.sessions.admin;

const createApp = async (o: OrgCreds, name: string, extra: Record<string, unknown> = {}) => {
  const r = await call(s.url, 'POST', '/v1/apps', { token: o.sessions.admin, body: { data: { name, ...extra } } });
  if (r.status !== 201) throw new Error(`app create failed: ${r.status} ${r.text}`);
  // The created answer adds the default source(s); the App resource itself has no `sources`.
  const { sources: _sources, ...app } = r.body.data;
  return app;
};
const getApp = async (id: string, token = admin) => (await call(s.url, 'GET', `/v1/apps/${id}`, { token })).body.data;
const list = (o: OrgCreds, qs: string) => call(s.url, 'GET', `/v1/apps${qs}`, { token: o.sessions.admin });

t.test('POST /v1/apps creates an active app with its api source', async (t) => {
  const r = await call(s.url, 'POST', '/v1/apps', { token: admin, body: { data: { name: 'Checkout' } } });
  t.equal(r.status, 201);
  const { sources, ...a } = r.body.data;
  t.same(Object.keys(a).sort(), APP_FIELDS, 'exactly the App fields, and the default sources beside them');
  t.match(a.id, /^app_[0-9a-z]+$/);
  t.equal(a.orgId, org.org.id);
  t.equal(a.name, 'Checkout');
  t.equal(a.environment, 'production', 'environment defaults to production');
  t.equal(a.status, 'active');
  t.equal(a.archivedAt, null);
  t.equal(a.lastReceivedAt, null);
  t.equal(a.sourceCount, 1, 'born with one source');
  t.ok(isDateTime(a.createdAt), 'createdAt date-time');
  t.ok(isDateTime(a.updatedAt), 'updatedAt date-time');
  t.equal(r.body.meta.requestId, r.headers.get('x-request-id'));

  const dev = await createApp(org, 'Dev app', { environment: 'development' });
  t.equal(dev.environment, 'development');

  const got = await call(s.url, 'GET', `/v1/apps/${a.id}`, { token: admin });
  t.equal(got.status, 200);
  t.same(got.body.data, a, 'GET one answers the created app');
  const gotMember = await call(s.url, 'GET', `/v1/apps/${a.id}`, { token: org.sessions.member });
  t.same(gotMember.body.data, a, 'member reads the same app');

  const srcs = await call(s.url, 'GET', `/v1/apps/${a.id}/sources`, { token: admin });
  t.equal(srcs.status, 200);
  t.equal(srcs.body.data.length, 1, 'one source');
  const src = srcs.body.data[0];
  t.same(sources, [{ id: src.id, kind: 'api', name: 'api' }], 'the created answer names the default source');
  t.same(Object.keys(src).sort(), SOURCE_FIELDS, 'exactly the Source fields');
  t.equal(src.kind, 'api');
  t.equal(src.appId, a.id);
  t.equal(src.orgId, org.org.id);
  t.same(src.config, {});
  t.equal(src.configured, false);
  t.equal(src.archivedAt, null);
  t.equal(src.lastReceivedAt, null);
  t.ok(isDateTime(src.createdAt) && isDateTime(src.updatedAt));
  t.match(src.id, /^src_/);
  t.equal(srcs.body.meta.hasMore, false);
  t.equal(srcs.body.meta.nextCursor, null);
  const one = await call(s.url, 'GET', `/v1/sources/${src.id}`, { token: admin });
  t.same(one.body.data, src, 'GET /v1/sources/{id} answers the same source');
});

t.test('every app gets its own api source', async (t) => {
  const o = await createOrg(s);
  const apps = [await createApp(o, 'one'), await createApp(o, 'two'), await createApp(o, 'three')];
  const ids = new Set<string>();
  for (const a of apps) {
    const r = await call(s.url, 'GET', `/v1/apps/${a.id}/sources`, { token: o.sessions.admin });
    t.equal(r.body.data.length, 1, `${a.name}: one source`);
    t.equal(r.body.data[0].kind, 'api', `${a.name}: kind api`);
    t.equal(r.body.data[0].appId, a.id, `${a.name}: belongs to the app`);
    ids.add(r.body.data[0].id);
  }
  t.equal(ids.size, 3, 'distinct source ids');
});

t.test('app create validation', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['name empty', { name: '' }, '/data/name'],
    ['name 101 chars', { name: 'x'.repeat(101) }, '/data/name'],
    ['name missing', {}, '/data/name'],
    ['name a number', { name: 42 }, '/data/name'],
    ['name null', { name: null }, '/data/name'],
    ['environment unknown', { name: 'ok', environment: 'staging' }, '/data/environment'],
    ['environment null', { name: 'ok', environment: null }, '/data/environment'],
  ];
  for (const [label, data, field] of cases) {
    const r = await call(s.url, 'POST', '/v1/apps', { token: admin, body: { data } });
    expectError(t, r, 422, 'validation_failed', label, field);
  }
  for (const name of ['x', 'y'.repeat(100), 'ünïcødé ✓ name']) {
    const r = await call(s.url, 'POST', '/v1/apps', { token: admin, body: { data: { name } } });
    t.equal(r.status, 201, `name of ${name.length} chars accepted`);
    t.equal(r.body.data?.name, name, 'name stored as given');
  }
});

t.test('GET /v1/apps pagination walks pages newest first', async (t) => {
  const o = await createOrg(s);
  const created: any[] = [];
  for (let i = 0; i < 5; i++) {
    created.push(await createApp(o, `page-${i}`));
    await clockPast(created[i].createdAt); // distinct creation instants
  }
  const expected = created.map((a) => a.id).reverse();

  const seen: string[] = [];
  const pageSizes: number[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 10; guard++) {
    const r = await list(o, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    t.equal(r.status, 200, `page ${guard}: 200`);
    pageSizes.push(r.body.data.length);
    for (const a of r.body.data) seen.push(a.id);
    t.type(r.body.meta.hasMore, 'boolean');
    if (r.body.meta.hasMore) {
      t.type(r.body.meta.nextCursor, 'string', 'a cursor while more exist');
      cursor = r.body.meta.nextCursor;
    } else {
      t.equal(r.body.meta.nextCursor, null, 'nextCursor null on the last page');
      cursor = null;
      break;
    }
  }
  t.same(pageSizes, [2, 2, 1], 'pages of 2, 2, 1');
  t.equal(new Set(seen).size, seen.length, 'no duplicates');
  t.same(seen, expected, 'all five, newest first');

  const all = await list(o, '');
  t.equal(all.status, 200, 'no limit: default page');
  t.same(all.body.data.map((a: any) => a.id), expected, 'same order without a limit');
  t.equal(all.body.meta.hasMore, false);
  t.equal(all.body.meta.nextCursor, null);
  const times = all.body.data.map((a: any) => Date.parse(a.createdAt));
  t.same(times, [...times].sort((a: number, b: number) => b - a), 'createdAt descending');

  const again = await list(o, '?limit=2');
  const first = await list(o, '?limit=2');
  t.same(again.body.data.map((a: any) => a.id), first.body.data.map((a: any) => a.id), 'stable order between calls');

  const exact = await list(o, '?limit=5');
  t.equal(exact.body.data.length, 5);
  t.equal(exact.body.meta.hasMore, false, 'limit equal to the count: no more');
  t.equal(exact.body.meta.nextCursor, null);

  const max = await list(o, '?limit=100');
  t.equal(max.status, 200, 'limit 100 accepted');
  const min = await list(o, '?limit=1');
  t.equal(min.status, 200, 'limit 1 accepted');
  t.equal(min.body.data.length, 1);

  // A newer app does not shift a walk that already has a cursor.
  const p1 = await list(o, '?limit=2');
  await createApp(o, 'page-late');
  const p2 = await list(o, `?limit=2&cursor=${encodeURIComponent(p1.body.meta.nextCursor)}`);
  t.same(p2.body.data.map((a: any) => a.id), expected.slice(2, 4), 'cursor continues after the last seen item');
});

t.test('GET /v1/apps query validation', async (t) => {
  const bad: Array<[string, string, string]> = [
    ['limit 0', '?limit=0', '/limit'],
    ['limit 101', '?limit=101', '/limit'],
    ['limit abc', '?limit=abc', '/limit'],
    ['limit -1', '?limit=-1', '/limit'],
    ['limit 1.5', '?limit=1.5', '/limit'],
    ['status bogus', '?status=deleted', '/status'],
    ['q 201 chars', `?q=${'q'.repeat(201)}`, '/q'],
  ];
  for (const [label, qs, field] of bad) expectError(t, await list(org, qs), 422, 'validation_failed', label, field);
  const cursors: Array<[string, string]> = [
    ['garbage', 'not-a-cursor!!'],
    ['random base64', randomBytes(12).toString('base64url')],
    ['json object', Buffer.from(JSON.stringify({ id: 'x' })).toString('base64url')],
  ];
  for (const [label, cursor] of cursors) {
    expectError(t, await list(org, `?cursor=${encodeURIComponent(cursor)}`), 422, 'validation_failed', `bad cursor: ${label}`, 'cursor');
  }
  t.equal((await list(org, `?q=${'q'.repeat(200)}`)).status, 200, 'q of 200 chars accepted');
});

t.test('q is a case-insensitive literal substring', async (t) => {
  const o = await createOrg(s);
  const names = ['Alpha Widget', 'beta WIDGET', '100% pure', '1000 pure', 'under_score', 'underXscore', 'back\\slash', 'plain'];
  const byName = new Map<string, string>();
  for (const n of names) byName.set(n, (await createApp(o, n)).id);
  const cases: Array<[string, string[]]> = [
    ['widget', ['Alpha Widget', 'beta WIDGET']],
    ['WiDgEt', ['Alpha Widget', 'beta WIDGET']],
    ['alpha', ['Alpha Widget']],
    ['%', ['100% pure']],
    ['0%', ['100% pure']],
    ['_', ['under_score']],
    ['r_s', ['under_score']],
    ['\\', ['back\\slash']],
    ['pure', ['100% pure', '1000 pure']],
    ['nothing-matches', []],
    ['', names],
  ];
  for (const [q, want] of cases) {
    const r = await list(o, `?limit=100&q=${encodeURIComponent(q)}`);
    t.equal(r.status, 200, `q=${JSON.stringify(q)}: 200`);
    t.same(r.body.data.map((a: any) => a.name).sort(), [...want].sort(), `q=${JSON.stringify(q)} matches ${JSON.stringify(want)}`);
  }
  const paged = await list(o, `?limit=1&q=widget`);
  t.equal(paged.body.data.length, 1);
  t.equal(paged.body.meta.hasMore, true, 'q combines with pagination');
  const next = await list(o, `?limit=1&q=widget&cursor=${encodeURIComponent(paged.body.meta.nextCursor)}`);
  t.equal(next.body.data.length, 1);
  t.equal(next.body.meta.hasMore, false);
  t.not(next.body.data[0].id, paged.body.data[0].id);
  t.match(next.body.data[0].name, /widget/i);
});

t.test('PATCH /v1/apps/{id}: rename and archive', async (t) => {
  const o = await createOrg(s);
  const a = await createApp(o, 'before');
  await clockPast(a.updatedAt);
  const r = await call(s.url, 'PATCH', `/v1/apps/${a.id}`, { token: o.sessions.admin, body: { data: { name: 'after' } } });
  t.equal(r.status, 200);
  t.equal(r.body.data.name, 'after');
  t.equal(r.body.data.status, 'active');
  t.equal(r.body.data.archivedAt, null);
  t.equal(r.body.data.createdAt, a.createdAt, 'createdAt unchanged');
  t.ok(Date.parse(r.body.data.updatedAt) > Date.parse(a.updatedAt), 'updatedAt moves forward');
  t.same({ ...r.body.data, name: a.name, updatedAt: a.updatedAt }, a, 'nothing else changed');
  t.equal((await getApp(a.id, o.sessions.admin)).name, 'after', 'rename persisted');

  const bad: Array<[string, unknown, string]> = [
    ['name empty', { name: '' }, '/data/name'],
    ['name 101 chars', { name: 'n'.repeat(101) }, '/data/name'],
    ['status active', { status: 'active' }, '/data/status'],
    ['status bogus', { status: 'deleted' }, '/data/status'],
    ['status null', { status: null }, '/data/status'],
  ];
  for (const [label, data, field] of bad) {
    expectError(t, await call(s.url, 'PATCH', `/v1/apps/${a.id}`, { token: o.sessions.admin, body: { data } }), 422, 'validation_failed', label, field);
  }
  t.equal((await getApp(a.id, o.sessions.admin)).name, 'after', 'refused patches changed nothing');

  const arch = await call(s.url, 'PATCH', `/v1/apps/${a.id}`, { token: o.sessions.admin, body: { data: { status: 'archived' } } });
  t.equal(arch.status, 200);
  t.equal(arch.body.data.status, 'archived');
  t.ok(isDateTime(arch.body.data.archivedAt), 'archivedAt set');
  t.equal(arch.body.data.name, 'after');
  const again = await call(s.url, 'PATCH', `/v1/apps/${a.id}`, { token: o.sessions.admin, body: { data: { status: 'archived' } } });
  t.equal(again.body.data.archivedAt, arch.body.data.archivedAt, 'archiving again keeps archivedAt');
  const back = await call(s.url, 'PATCH', `/v1/apps/${a.id}`, { token: o.sessions.admin, body: { data: { status: 'active' } } });
  expectError(t, back, 422, 'validation_failed', 'no way back to active', '/data/status');
  t.equal((await getApp(a.id, o.sessions.admin)).status, 'archived', 'still archived');
  const renamed = await call(s.url, 'PATCH', `/v1/apps/${a.id}`, { token: o.sessions.admin, body: { data: { name: 'archived-renamed' } } });
  t.equal(renamed.status, 200, 'an archived app can be renamed');
  t.equal(renamed.body.data.status, 'archived', 'rename keeps it archived');

  expectError(t, await call(s.url, 'PATCH', '/v1/apps/app_unknown', { token: o.sessions.admin, body: { data: { name: 'x' } } }), 404, 'not_found', 'unknown app');
  expectError(t, await call(s.url, 'GET', '/v1/apps/app_unknown', { token: o.sessions.admin }), 404, 'not_found', 'unknown app GET');
});

t.test('status filter', async (t) => {
  const o = await createOrg(s);
  const live = await createApp(o, 'live');
  const gone = await createApp(o, 'gone');
  await call(s.url, 'PATCH', `/v1/apps/${gone.id}`, { token: o.sessions.admin, body: { data: { status: 'archived' } } });
  const cases: Array<[string, string[]]> = [
    ['?status=active', [live.id]],
    ['?status=archived', [gone.id]],
    ['?status=all', [gone.id, live.id]],
    ['', [gone.id, live.id]],
    ['?status=active&q=GON', []],
    ['?status=archived&q=GON', [gone.id]],
  ];
  for (const [qs, want] of cases) {
    const r = await list(o, qs);
    t.equal(r.status, 200, `${qs || '(none)'}: 200`);
    t.same(r.body.data.map((a: any) => a.id), want, `${qs || '(none)'}: ${want.length} apps`);
    for (const a of r.body.data) t.equal(a.status, a.id === gone.id ? 'archived' : 'active');
  }
});

t.test('sources: kinds, write-only secret, rotation, archive', async (t) => {
  const o = await createOrg(s);
  const tok = o.sessions.admin;
  const app = await createApp(o, 'with-sources');
  const secret1 = 'whsec_' + randomBytes(24).toString('base64');
  const secret2 = 'whsec_' + randomBytes(24).toString('base64');
  const secret3 = 'whsec_' + randomBytes(24).toString('base64');
  const sec64 = (x: string) => x.slice('whsec_'.length);
  const noSecret = (label: string, text: string) => {
    for (const sec of [secret1, secret2, secret3]) t.notOk(text.includes(sec), `${label}: secret value never echoed`);
    for (const sec of [secret1, secret2, secret3]) t.notOk(text.includes(sec64(sec)), `${label}: secret payload never echoed`);
    t.notOk(text.includes('signingSecret'), `${label}: no signingSecret member`);
  };

  const idp = await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data: { kind: 'idp', config: { signingSecret: secret1, region: 'eu' } } } });
  t.equal(idp.status, 201, 'idp with secret: 201');
  t.same(Object.keys(idp.body.data).sort(), SOURCE_FIELDS);
  t.equal(idp.body.data.kind, 'idp');
  t.equal(idp.body.data.appId, app.id);
  t.equal(idp.body.data.configured, true, 'configured true');
  t.same(idp.body.data.config, { region: 'eu' }, 'the rest of the config is kept');
  t.equal(idp.body.data.archivedAt, null);
  noSecret('create answer', idp.text);
  const idpId = idp.body.data.id;

  const g = await call(s.url, 'GET', `/v1/sources/${idpId}`, { token: tok });
  t.equal(g.body.data.configured, true);
  noSecret('GET source', g.text);
  const gm = await call(s.url, 'GET', `/v1/sources/${idpId}`, { token: o.sessions.member });
  t.equal(gm.status, 200, 'member reads a source');
  noSecret('GET source as member', gm.text);
  const l = await call(s.url, 'GET', `/v1/apps/${app.id}/sources`, { token: tok });
  noSecret('list sources', l.text);
  t.same(l.body.data.map((x: any) => x.kind).sort(), ['api', 'idp']);

  for (const [label, data] of [['no config', { kind: 'idp' }], ['empty config', { kind: 'idp', config: {} }]] as const) {
    const r = await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data } });
    t.equal(r.status, 201, `idp ${label}: 201`);
    t.equal(r.body.data.configured, false, `idp ${label}: configured false`);
    t.same(r.body.data.config, {}, `idp ${label}: config {}`);
  }
  const api2 = await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data: { kind: 'api', config: { note: 'second' } } } });
  t.equal(api2.status, 201, 'second api source: 201');
  t.equal(api2.body.data.kind, 'api');
  t.same(api2.body.data.config, { note: 'second' });
  t.equal(api2.body.data.configured, false);
  const api3 = await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data: { kind: 'api' } } });
  t.same(api3.body.data.config, {}, 'api config defaults to {}');

  const badCreate: Array<[string, unknown, string]> = [
    ['kind missing', { config: {} }, 'kind'],
    ['kind unknown', { kind: 'webhook', config: {} }, 'kind'],
    ['idp secret empty', { kind: 'idp', config: { signingSecret: '' } }, 'signingSecret'],
    ['idp secret a number', { kind: 'idp', config: { signingSecret: 12 } }, 'signingSecret'],
    ['idp config not an object', { kind: 'idp', config: 'whsec_x' }, '/data/config'],
    ['api config not an object', { kind: 'api', config: [1, 2] }, '/data/config'],
  ];
  for (const [label, data, field] of badCreate) {
    expectError(t, await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data } }), 422, 'validation_failed', label, field);
  }
  expectError(t, await call(s.url, 'POST', '/v1/apps/app_unknown/sources', { token: tok, body: { data: { kind: 'api' } } }), 404, 'not_found', 'source under unknown app');
  expectError(t, await call(s.url, 'GET', '/v1/apps/app_unknown/sources', { token: tok }), 404, 'not_found', 'sources of unknown app');

  // sourceCount counts non-archived sources: api + idp + 2 idp + 2 api = 6.
  t.equal((await getApp(app.id, tok)).sourceCount, 6, 'sourceCount after creating five more');

  // PATCH: rotate (new secret), keep (no secret member), clear (null).
  const rot = await call(s.url, 'PATCH', `/v1/sources/${idpId}`, { token: tok, body: { data: { config: { signingSecret: secret2, region: 'us' } } } });
  t.equal(rot.status, 200, 'rotate: 200');
  t.equal(rot.body.data.configured, true, 'rotate: configured');
  t.same(rot.body.data.config, { region: 'us' }, 'rotate: config replaced');
  noSecret('rotate answer', rot.text);

  const keep = await call(s.url, 'PATCH', `/v1/sources/${idpId}`, { token: tok, body: { data: { config: { region: 'ap' } } } });
  t.equal(keep.status, 200);
  t.equal(keep.body.data.configured, true, 'without signingSecret the stored secret is kept');
  t.same(keep.body.data.config, { region: 'ap' });
  noSecret('keep answer', keep.text);

  const clear = await call(s.url, 'PATCH', `/v1/sources/${idpId}`, { token: tok, body: { data: { config: { signingSecret: null } } } });
  t.equal(clear.status, 200);
  t.equal(clear.body.data.configured, false, 'signingSecret null clears the secret');
  t.same(clear.body.data.config, {}, 'config after clearing');
  noSecret('clear answer', clear.text);
  t.equal((await call(s.url, 'GET', `/v1/sources/${idpId}`, { token: tok })).body.data.configured, false, 'clear persisted');

  const set = await call(s.url, 'PATCH', `/v1/sources/${idpId}`, { token: tok, body: { data: { config: { signingSecret: secret3 } } } });
  t.equal(set.body.data.configured, true, 'a cleared source takes a new secret');
  noSecret('set answer', set.text);
  noSecret('list after rotations', (await call(s.url, 'GET', `/v1/apps/${app.id}/sources?limit=100`, { token: tok })).text);
  t.ok(Date.parse(set.body.data.updatedAt) >= Date.parse(idp.body.data.updatedAt), 'updatedAt does not go back');

  const badPatch: Array<[string, unknown, string]> = [
    ['config missing', {}, '/data/config'],
    ['secret empty', { config: { signingSecret: '' } }, 'signingSecret'],
    ['secret a number', { config: { signingSecret: 5 } }, 'signingSecret'],
  ];
  for (const [label, data, field] of badPatch) {
    expectError(t, await call(s.url, 'PATCH', `/v1/sources/${idpId}`, { token: tok, body: { data } }), 422, 'validation_failed', label, field);
  }
  const stillSet = await call(s.url, 'GET', `/v1/sources/${idpId}`, { token: tok });
  t.equal(stillSet.body.data.configured, true, 'refused patches keep the secret');
  t.same(stillSet.body.data.config, {}, 'refused patches keep the config');

  // DELETE archives; repeating it keeps the first archivedAt.
  const del = await call(s.url, 'DELETE', `/v1/sources/${idpId}`, { token: tok });
  t.equal(del.status, 200);
  t.ok(isDateTime(del.body.data.archivedAt), 'archivedAt set');
  t.equal(del.body.data.id, idpId);
  noSecret('delete answer', del.text);
  await clockPast(del.body.data.archivedAt);
  const del2 = await call(s.url, 'DELETE', `/v1/sources/${idpId}`, { token: tok });
  t.equal(del2.status, 200, 'repeated DELETE: 200');
  t.equal(del2.body.data.archivedAt, del.body.data.archivedAt, 'repeated DELETE keeps archivedAt');
  const after = await call(s.url, 'GET', `/v1/sources/${idpId}`, { token: tok });
  t.equal(after.body.data.archivedAt, del.body.data.archivedAt, 'archived source still readable');
  t.equal((await getApp(app.id, tok)).sourceCount, 5, 'sourceCount drops by one');
  expectError(t, await call(s.url, 'DELETE', '/v1/sources/src_unknown', { token: tok }), 404, 'not_found', 'unknown source DELETE');
  expectError(t, await call(s.url, 'PATCH', '/v1/sources/src_unknown', { token: tok, body: { data: { config: {} } } }), 404, 'not_found', 'unknown source PATCH');
  expectError(t, await call(s.url, 'GET', '/v1/sources/src_unknown', { token: tok }), 404, 'not_found', 'unknown source GET');
});

t.test('sources list pagination', async (t) => {
  const o = await createOrg(s);
  const app = await createApp(o, 'many-sources');
  for (let i = 0; i < 4; i++) await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: o.sessions.admin, body: { data: { kind: 'idp' } } });
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r: any = await call(s.url, 'GET', `/v1/apps/${app.id}/sources?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token: o.sessions.admin });
    t.equal(r.status, 200);
    seen.push(...r.body.data.map((x: any) => x.id));
    cursor = r.body.meta.hasMore ? r.body.meta.nextCursor : null;
    if (!r.body.meta.hasMore) t.equal(r.body.meta.nextCursor, null);
    pages++;
  } while (cursor && pages < 10);
  t.equal(pages, 3, 'five sources in pages of 2');
  t.equal(seen.length, 5);
  t.equal(new Set(seen).size, 5, 'no duplicates');
  for (const [label, qs] of [['limit 0', '?limit=0'], ['limit 101', '?limit=101'], ['limit abc', '?limit=abc']]) {
    expectError(t, await call(s.url, 'GET', `/v1/apps/${app.id}/sources${qs}`, { token: o.sessions.admin }), 422, 'validation_failed', label, '/limit');
  }
});

t.test('sourceCount and archived apps', async (t) => {
  const o = await createOrg(s);
  const tok = o.sessions.admin;
  const app = await createApp(o, 'count');
  const srcs = (await call(s.url, 'GET', `/v1/apps/${app.id}/sources`, { token: tok })).body.data;
  // Archiving the only source leaves zero active sources.
  await call(s.url, 'DELETE', `/v1/sources/${srcs[0].id}`, { token: tok });
  t.equal((await getApp(app.id, tok)).sourceCount, 0, 'archived sources are not counted');
  const fresh = await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data: { kind: 'api' } } });
  t.equal(fresh.status, 201, 'a fresh api source after archiving the first');
  t.not(fresh.body.data.id, srcs[0].id, 'with a new id');
  t.equal((await getApp(app.id, tok)).sourceCount, 1);
  const listed = await list(o, '');
  t.equal(listed.body.data.find((a: any) => a.id === app.id)?.sourceCount, 1, 'list items carry the same sourceCount');

  await call(s.url, 'PATCH', `/v1/apps/${app.id}`, { token: tok, body: { data: { status: 'archived' } } });
  for (const kind of ['api', 'idp']) {
    expectError(t, await call(s.url, 'POST', `/v1/apps/${app.id}/sources`, { token: tok, body: { data: { kind } } }), 409, 'conflict', `${kind} source on an archived app`);
  }
  t.equal((await getApp(app.id, tok)).sourceCount, 1, 'nothing was created');
  const sl = await call(s.url, 'GET', `/v1/apps/${app.id}/sources`, { token: tok });
  t.equal(sl.status, 200, 'sources of an archived app are still listed');
  t.equal(sl.body.data.length, 2);
});

t.test('names are stored verbatim, no injection through q', async (t) => {
  const o = await createOrg(s);
  const tricky = `x'); DROP TABLE apps; -- ${randomName('n')}`;
  const a = await createApp(o, tricky);
  t.equal(a.name, tricky);
  const r = await list(o, `?q=${encodeURIComponent("'); DROP")}`);
  t.equal(r.status, 200);
  t.same(r.body.data.map((x: any) => x.id), [a.id]);
  t.equal((await list(org, '?limit=1')).status, 200, 'apps table still there');
});
