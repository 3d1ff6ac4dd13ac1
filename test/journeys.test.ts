// Journeys: created by pushes (never turned on by one), answering their latest ready version;
// PATCH enables only a journey with a ready version; credentials and org isolation. Against a
// server database, the runtime's reads (newest ready version, compiled module) are checked too:
// the stored module evaluates in QuickJS to the definition.
import t from 'tap';
import pg from 'pg';
import { newQuickJSWASMModule } from 'quickjs-emscripten';
import { startServer, call, createAppFixture, createOrg, expectError, poll } from './helpers/server.js';
import { bundle, journeyEntry, journeySource, manifest, push, tarball, templateEntry, templateSource, upload } from './helpers/project.js';
import { latestReadyVersion, MODULE_GLOBAL, versionModule } from '../journeys/definitions/mod.js';

const s = await startServer();
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const org = fx.org;
const admin = org.sessions.admin;
const orgId = org.org.id;
const srcDigest = await upload(s, admin, await tarball({ 'headwater.json': '{}' }), 'source');
const JOURNEY_FIELDS = ['appId', 'enabled', 'key', 'latestVersion', 'orgId', 'purpose', 'pushId', 'trigger', 'updatedAt', 'versionId'];

const getJourney = (key: string, token = admin) => call(s.url, 'GET', `/v1/journeys/${encodeURIComponent(key)}`, { token });
const patch = (key: string, enabled: unknown, token = admin) => call(s.url, 'PATCH', `/v1/journeys/${encodeURIComponent(key)}`, { token, body: { data: { enabled } } });
const compiled = (id: string) => poll(() => call(s.url, 'GET', `/v1/pushes/${id}`, { token: admin }),
  (r) => r.status === 200 && r.body.data.compiledEntries === r.body.data.totalEntries, 90_000);

async function pushJourneys(entries: Array<[string, string]>, templates: Array<[string, string]> = []) {
  const journeys = [];
  for (const [key, source] of entries) journeys.push(journeyEntry(key, await upload(s, admin, await bundle(source)), { purpose: 'onboarding', trigger: { event: `${key}_started` } }));
  const tpls = [];
  for (const [key, source] of templates) tpls.push(templateEntry(key, await upload(s, admin, await bundle(source))));
  const r = await push(s, admin, orgId, fx.app.id, manifest({ journeys, templates: tpls, source: srcDigest }));
  if (r.status !== 201) throw new Error(`push failed: ${r.status} ${r.text}`);
  return (await compiled(r.body.data.id)).body.data;
}

t.test('a pushed journey is listed, off, with its ready version; PATCH turns it on and off', async (t) => {
  const p = await pushJourneys([['welcome', journeySource('welcome')]], [['welcome-email', templateSource('welcome-email')]]);
  const v = p.versions.find((x: any) => x.kind === 'journey');
  t.equal(v.status, 'ready', v.error);
  const g = await getJourney('welcome');
  t.equal(g.status, 200, g.text);
  const j = g.body.data;
  t.same(Object.keys(j).sort(), JOURNEY_FIELDS);
  t.equal(j.key, 'welcome');
  t.equal(j.latestVersion.status, 'ready', 'the newest version, ready');
  t.equal(j.latestVersion.id, j.versionId, 'the newest version is the one that runs');
  t.equal(j.orgId, orgId);
  t.equal(j.appId, fx.app.id);
  t.equal(j.enabled, false, 'a push turns nothing on');
  t.same(j.trigger, { event: 'welcome_started' });
  t.equal(j.purpose, 'onboarding');
  t.equal(j.versionId, v.id);
  t.equal(j.pushId, p.id);
  expectError(t, await getJourney('welcome-email'), 404, 'not_found', 'a template is not a journey');

  const on = await patch('welcome', true);
  t.equal(on.status, 200, on.text);
  t.equal(on.body.data.enabled, true);
  t.ok(Date.parse(on.body.data.updatedAt) >= Date.parse(j.updatedAt));
  t.equal((await getJourney('welcome')).body.data.enabled, true);

  // A new push of the journey keeps it on and moves it to the newer ready version once compiled.
  const p2 = await pushJourneys([['welcome', journeySource('welcome', 'await ctx.sleep("5s");')]]);
  const j2 = (await getJourney('welcome')).body.data;
  t.equal(j2.enabled, true, 'a push turns nothing off either');
  t.equal(j2.pushId, p2.id);
  t.equal(j2.versionId, p2.versions[0].id);

  // A newer version that fails leaves the journey on its last ready version.
  const p3 = await pushJourneys([['welcome', journeySource('welcome', '', 'throw new Error("broken");')]]);
  t.equal(p3.versions[0].status, 'failed');
  const j3 = (await getJourney('welcome')).body.data;
  t.equal(j3.versionId, p2.versions[0].id, 'still the last ready version');

  const off = await patch('welcome', false, org.deployKey);
  t.equal(off.status, 200, 'the deploy key acts as org:admin on journeys');
  t.equal(off.body.data.enabled, false);
});

t.test('enabling a journey with no ready version is 409 release_not_ready', async (t) => {
  const p = await pushJourneys([['broken', journeySource('broken', '', 'throw new Error("no");')]]);
  t.equal(p.versions[0].status, 'failed');
  const j = (await getJourney('broken')).body.data;
  t.equal(j.versionId, null);
  t.equal(j.pushId, null);
  t.same(j.trigger, { event: 'broken_started' }, 'trigger of its latest version while none is ready');
  expectError(t, await patch('broken', true), 409, 'release_not_ready', 'enable');
  t.equal((await getJourney('broken')).body.data.enabled, false);
  t.equal((await patch('broken', false)).status, 200, 'disabling is always possible');
});

t.test('PATCH checks: unknown key, bad body, roles, schemes', async (t) => {
  await pushJourneys([['roles', journeySource('roles')]]);
  expectError(t, await patch('nope', true), 404, 'not_found', 'unknown key');
  expectError(t, await patch('roles', 'yes'), 422, 'validation_failed', 'enabled not boolean', '/data/enabled');
  expectError(t, await call(s.url, 'PATCH', '/v1/journeys/roles', { token: admin, body: { data: {} } }), 422, 'validation_failed', 'no enabled', '/data/enabled');
  expectError(t, await patch('roles', true, org.sessions.member), 403, 'forbidden', 'member');
  expectError(t, await patch('roles', true, org.pipelineKey), 401, 'invalid_key', 'pipeline key');
  expectError(t, await patch('roles', true, org.apiKey), 401, 'invalid_key', 'api key');
  expectError(t, await patch('x'.repeat(65), true), 422, 'validation_failed', 'key over 64', 'key');
  t.equal((await getJourney('roles', org.sessions.member)).status, 200, 'a member reads');
  t.equal((await getJourney('roles', org.deployKey)).status, 200, 'the deploy key reads');
  expectError(t, await getJourney('roles', org.pipelineKey), 401, 'invalid_key', 'pipeline key read');
  const other = await createOrg(s);
  expectError(t, await getJourney('roles', other.sessions.admin), 404, 'not_found', 'another org');
  expectError(t, await patch('roles', true, other.sessions.admin), 404, 'not_found', 'another org PATCH');
  t.equal((await call(s.url, 'GET', '/v1/journeys', { token: other.sessions.admin })).body.data.length, 0, 'another org lists none');
});

t.test('listing in key order with cursor pages', async (t) => {
  const f = await createAppFixture(s);
  const src = await upload(s, f.admin, await tarball({ 'a.txt': 'a' }), 'source');
  const journeys = [];
  for (const key of ['c', 'a', 'b']) journeys.push(journeyEntry(key, await upload(s, f.admin, await bundle(journeySource(key)))));
  const r = await push(s, f.admin, f.org.org.id, f.app.id, manifest({ journeys, source: src }));
  t.equal(r.status, 201);
  const p1 = await call(s.url, 'GET', '/v1/journeys?limit=2', { token: f.org.deployKey });
  t.same(p1.body.data.map((j: any) => j.key), ['a', 'b']);
  t.equal(p1.body.meta.hasMore, true);
  const p2 = await call(s.url, 'GET', `/v1/journeys?limit=2&cursor=${p1.body.meta.nextCursor}`, { token: f.org.deployKey });
  t.same(p2.body.data.map((j: any) => j.key), ['c']);
  t.equal(p2.body.meta.hasMore, false);
  expectError(t, await call(s.url, 'GET', '/v1/journeys?limit=0', { token: f.admin }), 422, 'validation_failed', 'limit 0', 'limit');
});

t.test('the runtime reads the newest ready version and evaluates its module', { skip: !process.env.DATABASE_URL && 'needs DATABASE_URL' }, async (t) => {
  const p = await pushJourneys([['runtime', journeySource('runtime')]]);
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
  t.teardown(() => pool.end());
  const v = await latestReadyVersion(pool, orgId, 'runtime');
  t.equal(v?.id, p.versions[0].id);
  const m = await versionModule(pool, orgId, v!.id);
  t.ok(m, 'the compiled module');
  t.equal(await versionModule(pool, 'org_other', v!.id), null, 'scoped by org');
  const quickjs = await newQuickJSWASMModule();
  const ctx = quickjs.newContext();
  try {
    const r = ctx.evalCode(`${m!.code}\n;JSON.stringify({ kind: ${MODULE_GLOBAL}.default.kind, key: ${MODULE_GLOBAL}.default.key, h: typeof ${MODULE_GLOBAL}.default.handler })`);
    t.notOk(r.error, 'evaluates');
    if (!r.error) { t.same(JSON.parse(ctx.getString(r.value)), { kind: 'journey', key: 'runtime', h: 'function' }); r.value.dispose(); }
    else r.error.dispose();
  } finally { ctx.dispose(); }
});
