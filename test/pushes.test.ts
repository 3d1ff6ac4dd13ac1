// Pushes: versions only for changed bundles, compilation per version (ready, failed with a reason,
// a runaway bundle bounded), manifest checks (stored digests, the org's app, the Limits table),
// credentials (the pipeline key creates but cannot read), listing and the source download.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startServer, call, createOrg, createAppFixture, expectError, poll } from './helpers/server.js';
import {
  bundle, journeyEntry, journeySource, manifest, push, tarball, templateEntry, templateSource, upload,
} from './helpers/project.js';

const s = await startServer();
t.teardown(() => s.close());

const fx = await createAppFixture(s);
const org = fx.org;
const admin = org.sessions.admin;
const orgId = org.org.id;
const appId = fx.app.id;
const HEX64 = /^[0-9a-f]{64}$/;
const PUSH_FIELDS = ['appId', 'compiledEntries', 'createdAt', 'createdBy', 'createdByRole', 'createdByScheme', 'id', 'manifest', 'manifestDigest', 'orgId', 'seq', 'sourceDigest', 'totalEntries', 'versions'];
const VERSION_FIELDS = ['appId', 'compiledAt', 'error', 'id', 'key', 'kind', 'manifest', 'moduleDigest', 'orgId', 'pushId', 'pushedAt', 'status'];

const src = await tarball({ 'headwater.json': '{"purposes":[]}', 'welcome.ts': 'export default 1;\n' });
const srcDigest = await upload(s, admin, src, 'source');

const getPush = (id: string, token = admin) => call(s.url, 'GET', `/v1/pushes/${id}`, { token });
/** Waits until every version of the push finished compiling. */
const compiled = (id: string) => poll(() => getPush(id), (r) => r.status === 200 && r.body.data.compiledEntries === r.body.data.totalEntries, 90_000);

t.test('a push files a version per entry, and they compile to ready', async (t) => {
  const jb = await upload(s, admin, await bundle(journeySource('welcome')));
  const tb = await upload(s, admin, await bundle(templateSource('welcome-email')));
  const m = manifest({ journeys: [journeyEntry('welcome', jb, { tags: ['a'], description: 'hello' })], templates: [templateEntry('welcome-email', tb)], source: srcDigest });
  const r = await push(s, admin, orgId, appId, m);
  t.equal(r.status, 201, r.text);
  const p = r.body.data;
  t.same(Object.keys(p).sort(), PUSH_FIELDS);
  t.match(p.id, /^psh_/);
  t.equal(p.orgId, orgId);
  t.equal(p.appId, appId);
  t.equal(p.sourceDigest, srcDigest);
  t.match(p.manifestDigest, HEX64);
  t.equal(p.manifest.protocol, 3);
  t.equal(p.totalEntries, 2);
  t.equal(p.versions.length, 2);
  t.equal(p.manifest.templates[0].unsubscribeLink, false, 'defaults applied to the stored manifest');
  for (const v of p.versions) {
    t.same(Object.keys(v).sort(), VERSION_FIELDS);
    t.equal(v.pushId, p.id);
    t.equal(v.appId, appId);
    t.ok(['compiling', 'ready'].includes(v.status));
  }
  const done = await compiled(p.id);
  t.equal(done.body.data.compiledEntries, 2);
  for (const v of done.body.data.versions) {
    t.equal(v.status, 'ready', `${v.kind} ${v.key} ready (${v.error})`);
    t.match(v.moduleDigest, HEX64);
    t.ok(v.compiledAt);
    t.equal(v.error, null);
  }
  const byKind = Object.fromEntries(done.body.data.versions.map((v: any) => [v.kind, v]));
  t.equal(byKind.journey.key, 'welcome');
  t.equal(byKind.journey.manifest.bundle, jb, 'the version carries its manifest entry');
  t.equal(byKind.template.key, 'welcome-email');

  // Unchanged: the push is recorded with no version.
  const same = await push(s, admin, orgId, appId, m);
  t.equal(same.status, 201);
  t.equal(same.body.data.totalEntries, 0, 'no version for unchanged bundles');
  t.same(same.body.data.versions, []);
  t.equal(same.body.data.seq, p.seq + 1, 'pushes are numbered per org');
  t.equal(same.body.data.manifestDigest, p.manifestDigest, 'same manifest, same digest');

  // One journey changed: exactly one version, for that key.
  const jb2 = await upload(s, admin, await bundle(journeySource('welcome', 'await ctx.sleep("2s");')));
  const changed = await push(s, org.pipelineKey, orgId, appId, { ...m, journeys: [journeyEntry('welcome', jb2)] });
  t.equal(changed.status, 201, changed.text);
  t.equal(changed.body.data.totalEntries, 1);
  t.equal(changed.body.data.versions[0].key, 'welcome');
  t.equal(changed.body.data.versions[0].kind, 'journey');
  t.equal(changed.body.data.createdBy, 'pipelineKey');
  const c2 = await compiled(changed.body.data.id);
  t.equal(c2.body.data.versions[0].status, 'ready');
  t.not(c2.body.data.versions[0].moduleDigest, byKind.journey.moduleDigest, 'a new module');
});

t.test('each version compiles on its own: a bundle that throws fails only its key', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['throws', journeySource('throws', '', 'throw new Error("boom at load");'), /boom at load/],
    ['loops', journeySource('loops', '', 'while (true) {}'), /did not finish/],
    ['allocates', journeySource('allocates', '', 'const hoard = []; for (;;) hoard.push(new Uint8Array(1 << 20));'), /memory limit|did not finish/],
    ['wrong-key', journeySource('another-key'), /another-key/],
    ['no-default', 'export const x = 1;', /no default export/],
    ['not-a-definition', 'export default 42;', /number/],
    ['kind-mismatch', templateSource('kind-mismatch'), /template/],
    ['imports', "import x from 'left-pad'; export default x;", /imports "left-pad"/],
  ];
  const journeys = [];
  for (const [key, source] of cases) {
    // esbuild keeps an unresolvable import only when marked external: build that one by hand.
    const bytes = key === 'imports' ? Buffer.from(source) : await bundle(source);
    journeys.push(journeyEntry(key, await upload(s, admin, bytes)));
  }
  const tb = await upload(s, admin, await bundle(templateSource('fine-template')));
  const r = await push(s, admin, orgId, appId, manifest({ journeys, templates: [templateEntry('fine-template', tb)], source: srcDigest }));
  t.equal(r.status, 201, r.text);
  const done = await compiled(r.body.data.id);
  t.equal(done.body.data.compiledEntries, cases.length + 1, 'every version finished');
  const by = Object.fromEntries(done.body.data.versions.map((v: any) => [v.key, v]));
  t.equal(by['fine-template'].status, 'ready', 'the template beside them compiles');
  for (const [key, , why] of cases) {
    t.equal(by[key].status, 'failed', `${key} failed`);
    t.match(by[key].error, why, `${key}: ${by[key].error}`);
    t.equal(by[key].moduleDigest, null);
    t.ok(by[key].compiledAt, 'failed versions have finished compiling');
  }
});

t.test('manifest references: unstored digests, foreign apps, another org, duplicate keys', async (t) => {
  const jb = await upload(s, admin, await bundle(journeySource('refs')));
  const ghost = 'a'.repeat(64);
  const r = await push(s, admin, orgId, appId, manifest({ journeys: [journeyEntry('refs', jb), journeyEntry('ghost', ghost)], templates: [templateEntry('t', 'b'.repeat(64))], source: 'c'.repeat(64) }));
  expectError(t, r, 422, 'validation_failed', 'unstored digests');
  for (const ptr of ['/data/manifest/journeys/1/bundle', '/data/manifest/templates/0/bundle', '/data/manifest/source']) t.match(r.body.error.message, ptr, `names ${ptr}`);
  t.notMatch(r.body.error.message, '/journeys/0/bundle', 'not the stored one');

  const other = await createAppFixture(s);
  expectError(t, await push(s, admin, orgId, other.app.id, manifest({ source: srcDigest })), 422, 'validation_failed', 'another org\'s app', '/data/appId');
  expectError(t, await push(s, admin, orgId, 'app_nope', manifest({ source: srcDigest })), 422, 'validation_failed', 'unknown app', '/data/appId');
  expectError(t, await push(s, admin, other.org.org.id, appId, manifest({ source: srcDigest })), 422, 'validation_failed', 'another org id', '/data/orgId');
  // Org B cannot use org A's artifacts.
  const b = await push(s, other.org.sessions.admin, other.org.org.id, other.app.id, manifest({ source: srcDigest }));
  expectError(t, b, 422, 'validation_failed', 'another org\'s artifact', '/data/manifest/source');
  const dup = await push(s, admin, orgId, appId, manifest({ journeys: [journeyEntry('d', jb), journeyEntry('d', jb)], source: srcDigest }));
  expectError(t, dup, 422, 'validation_failed', 'duplicate key', '/data/manifest/journeys/1/key');
  // A journey and a template may share a key (keys are unique per kind).
  const tb = await upload(s, admin, await bundle(templateSource('shared')));
  const shared = await push(s, admin, orgId, appId, manifest({ journeys: [journeyEntry('shared', jb)], templates: [templateEntry('shared', tb)], source: srcDigest }));
  t.equal(shared.status, 201, shared.text);
});

t.test('the Limits table: each limit at its boundary is accepted, one over is 422 naming the field', async (t) => {
  const jb = await upload(s, admin, await bundle(journeySource('limits')));
  const tb = await upload(s, admin, await bundle(templateSource('limits')));
  const J = (extra: Record<string, unknown> = {}, key = 'limits') => journeyEntry(key, jb, extra);
  const T = (extra: Record<string, unknown> = {}, key = 'limits') => templateEntry(key, tb, extra);
  const P = (extra: Record<string, unknown> = {}) => ({ key: 'onboarding', label: 'Onboarding', ...extra });
  const str = (n: number) => 'x'.repeat(n);
  const many = <X>(n: number, f: (i: number) => X) => Array.from({ length: n }, (_, i) => f(i));
  // [name, manifest parts at the boundary, one over, pointer named]
  const rows: Array<[string, Record<string, unknown>, Record<string, unknown>, string]> = [
    ['journeys 0-100', { journeys: many(100, (i) => J({}, `j${i}`)) }, { journeys: many(101, (i) => J({}, `j${i}`)) }, '/data/manifest/journeys'],
    ['templates 0-200', { templates: many(200, (i) => T({}, `t${i}`)) }, { templates: many(201, (i) => T({}, `t${i}`)) }, '/data/manifest/templates'],
    ['purposes 0-20', { purposes: many(20, (i) => P({ key: `p${i}` })) }, { purposes: many(21, (i) => P({ key: `p${i}` })) }, '/data/manifest/purposes'],
    ['journey tags 0-20', { journeys: [J({ tags: many(20, String) })] }, { journeys: [J({ tags: many(21, String) })] }, '/data/manifest/journeys/0/tags'],
    ['template tags 0-20', { templates: [T({ tags: many(20, String) })] }, { templates: [T({ tags: many(21, String) })] }, '/data/manifest/templates/0/tags'],
    ['journey key 0-64', { journeys: [J({}, str(64))] }, { journeys: [J({}, str(65))] }, '/data/manifest/journeys/0/key'],
    ['journey key empty', { journeys: [J({}, '')] }, { journeys: [J({ key: 7 })] }, '/data/manifest/journeys/0/key'],
    ['template key 0-64', { templates: [T({}, str(64))] }, { templates: [T({}, str(65))] }, '/data/manifest/templates/0/key'],
    ['journey purpose 0-50', { journeys: [J({ purpose: str(50) })] }, { journeys: [J({ purpose: str(51) })] }, '/data/manifest/journeys/0/purpose'],
    ['purpose key 0-50', { purposes: [P({ key: str(50) })] }, { purposes: [P({ key: str(51) })] }, '/data/manifest/purposes/0/key'],
    ['purpose label 1-50', { purposes: [P({ label: str(50) })] }, { purposes: [P({ label: str(51) })] }, '/data/manifest/purposes/0/label'],
    ['purpose label empty', { purposes: [P({ label: str(1) })] }, { purposes: [P({ label: '' })] }, '/data/manifest/purposes/0/label'],
    ['purpose default denied', { purposes: [P({ default: 'denied' })] }, { purposes: [P({ default: 'granted' })] }, '/data/manifest/purposes/0/default'],
    ['journey description 0-500', { journeys: [J({ description: str(500) })] }, { journeys: [J({ description: str(501) })] }, '/data/manifest/journeys/0/description'],
    ['journey from 0-200', { journeys: [J({ from: str(200) })] }, { journeys: [J({ from: str(201) })] }, '/data/manifest/journeys/0/from'],
    ['spine detail 0-200', { journeys: [J({ spine: [{ name: 'sleep', detail: str(200) }] })] }, { journeys: [J({ spine: [{ name: 'sleep', detail: str(201) }] })] }, '/data/manifest/journeys/0/spine/0/detail'],
    ['spine timeout 0-50', { journeys: [J({ spine: [{ name: 'waitForEvent', timeout: str(50) }] })] }, { journeys: [J({ spine: [{ name: 'waitForEvent', timeout: str(51) }] })] }, '/data/manifest/journeys/0/spine/0/timeout'],
    ['nested spine step', { journeys: [J({ spine: [{ name: 'if', steps: [{ name: 'end' }], otherwise: [{ name: 'restart' }] }] })] }, { journeys: [J({ spine: [{ name: 'if', steps: [{ name: 'jump' }] }] })] }, '/data/manifest/journeys/0/spine/0/steps/0/name'],
    ['protocol 3', { protocol: 3 }, { protocol: 2 }, '/data/manifest/protocol'],
    ['protocol is an integer', { protocol: 3 }, { protocol: '3' }, '/data/manifest/protocol'],
    ['sdk 1+', { sdk: 'x' }, { sdk: '' }, '/data/manifest/sdk'],
    ['template sendClass', { templates: [T({ sendClass: 'marketing' })] }, { templates: [T({ sendClass: 'bulk' })] }, '/data/manifest/templates/0/sendClass'],
    ['template verifyLink required', { templates: [T({ verifyLink: true })] }, { templates: [T({ verifyLink: undefined })] }, '/data/manifest/templates/0/verifyLink'],
    ['journey spine required', { journeys: [J({ spine: [] })] }, { journeys: [J({ spine: undefined })] }, '/data/manifest/journeys/0/spine'],
    ['journey trigger required', { journeys: [J({ trigger: { event: 'x' } })] }, { journeys: [J({ trigger: undefined })] }, '/data/manifest/journeys/0/trigger'],
    ['enrollment cooldown', { journeys: [J({ enrollment: { cooldown: '1d' } })] }, { journeys: [J({ enrollment: { cooldown: true } })] }, '/data/manifest/journeys/0/enrollment/cooldown'],
  ];
  for (const [name, ok, over, ptr] of rows) {
    const good = await push(s, admin, orgId, appId, manifest({ source: srcDigest, ...ok }));
    t.equal(good.status, 201, `${name}: boundary accepted (${good.text.slice(0, 200)})`);
    expectError(t, await push(s, admin, orgId, appId, manifest({ source: srcDigest, ...over })), 422, 'validation_failed', `${name}: one over`, ptr);
  }
  // appId and orgId: 0 to 200 characters.
  expectError(t, await push(s, admin, orgId, str(201), manifest({ source: srcDigest })), 422, 'validation_failed', 'appId over 200', '/data/appId');
  expectError(t, await push(s, admin, str(201), appId, manifest({ source: srcDigest })), 422, 'validation_failed', 'orgId over 200', '/data/orgId');
  // Bad envelopes.
  expectError(t, await call(s.url, 'POST', '/v1/pushes', { token: admin, body: { manifest: manifest({ source: srcDigest }) } }), 400, 'malformed_request', 'no data wrapper');
  expectError(t, await call(s.url, 'POST', '/v1/pushes', { token: admin, body: { data: { appId, orgId } } }), 422, 'validation_failed', 'no manifest', '/data/manifest');
});

t.test('credentials: the pipeline key creates but cannot read; deploy and API keys cannot push', async (t) => {
  const jb = await upload(s, org.pipelineKey, await bundle(journeySource('creds')));
  const m = manifest({ journeys: [journeyEntry('creds', jb)], source: srcDigest });
  const byPipeline = await push(s, org.pipelineKey, orgId, appId, m);
  t.equal(byPipeline.status, 201, byPipeline.text);
  const id = byPipeline.body.data.id;
  expectError(t, await getPush(id, org.pipelineKey), 401, 'invalid_key', 'pipeline key GET one');
  expectError(t, await call(s.url, 'GET', '/v1/pushes', { token: org.pipelineKey }), 401, 'invalid_key', 'pipeline key list');
  expectError(t, await call(s.url, 'GET', `/v1/pushes/${id}/source`, { token: org.pipelineKey }), 401, 'invalid_key', 'pipeline key source');
  expectError(t, await push(s, org.deployKey, orgId, appId, m), 403, 'deploy_key_scope', 'deploy key push');
  expectError(t, await getPush(id, org.deployKey), 403, 'deploy_key_scope', 'deploy key read');
  expectError(t, await push(s, org.apiKey, orgId, appId, m), 401, 'invalid_key', 'api key push');
  expectError(t, await push(s, '', orgId, appId, m), 401, 'invalid_key', 'no credential');
  const byMember = await push(s, org.sessions.member, orgId, appId, m);
  t.equal(byMember.status, 201, 'a member session may push (a push turns nothing on)');
  t.equal((await getPush(id, org.sessions.member)).status, 200, 'a member reads pushes');
  const other = await createOrg(s);
  expectError(t, await getPush(id, other.sessions.admin), 404, 'not_found', 'another org\'s push');
  expectError(t, await call(s.url, 'GET', `/v1/pushes/${id}/source`, { token: other.sessions.admin }), 404, 'not_found', 'another org\'s source');
  expectError(t, await getPush('psh_nope'), 404, 'not_found', 'unknown push');
});

t.test('the push\'s recorded author: credential kind, user and role, on create, get and list', async (t) => {
  const session = async (role: string, userId: string) => {
    const r = await call(s.url, 'POST', `/v1/orgs/${orgId}/sessions`, { token: s.operatorToken, body: { data: { role, userId } } });
    t.equal(r.status, 201, r.text);
    return r.body.data.token as string;
  };
  const alice = await session('org:admin', 'usr_alice');
  const bob = await session('org:member', 'usr_bob');
  const authors: Array<[string, string, { createdBy: string; createdByRole: string | null; createdByScheme: string }]> = [
    ['admin session', alice, { createdBy: 'usr_alice', createdByRole: 'org:admin', createdByScheme: 'session' }],
    ['member session', bob, { createdBy: 'usr_bob', createdByRole: 'org:member', createdByScheme: 'session' }],
    ['pipeline key', org.pipelineKey, { createdBy: 'pipelineKey', createdByRole: null, createdByScheme: 'pipelineKey' }],
  ];
  for (const [i, [what, token, author]] of authors.entries()) {
    // A bundle of its own per author, so that each push files a version to show beside its author.
    const jb = await upload(s, token, await bundle(journeySource('authored', `await ctx.sleep("${i + 1}s");`)));
    const r = await push(s, token, orgId, appId, manifest({ journeys: [journeyEntry('authored', jb)], source: srcDigest }));
    t.equal(r.status, 201, `${what}: ${r.text}`);
    t.match(r.body.data, author, `${what}: the answer names the author`);
    t.equal(r.body.data.versions.length, 1, `${what}: one version filed`);
    const got = await getPush(r.body.data.id);
    t.match(got.body.data, { ...author, versions: [{ key: 'authored' }] }, `${what}: GET one shows the author beside the versions`);
    const list = await call(s.url, 'GET', '/v1/pushes?limit=1', { token: bob });
    t.match(list.body.data[0], { id: r.body.data.id, ...author }, `${what}: the list shows it too`);
  }
});

t.test('the source download answers the uploaded tarball, byte for byte', async (t) => {
  const tgz = await tarball({ 'headwater.json': '{}', 'notes.txt': randomBytes(20_000).toString('base64') });
  const digest = await upload(s, admin, tgz, 'source');
  const r = await push(s, admin, orgId, appId, manifest({ source: digest }));
  t.equal(r.status, 201, r.text);
  const res = await fetch(`${s.url}/v1/pushes/${r.body.data.id}/source`, { headers: { authorization: `Bearer ${admin}` } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/gzip');
  const got = Buffer.from(await res.arrayBuffer());
  t.ok(got.equals(tgz), 'same bytes');
});

t.test('listing: newest first, the appId filter, cursor pages', async (t) => {
  const f = await createAppFixture(s);
  const a2 = await call(s.url, 'POST', '/v1/apps', { token: f.admin, body: { data: { name: 'second' } } });
  const srcB = await upload(s, f.admin, src, 'source');
  const ids: string[] = [];
  for (const app of [f.app.id, a2.body.data.id, f.app.id]) {
    const r = await push(s, f.admin, f.org.org.id, app, manifest({ source: srcB }));
    ids.push(r.body.data.id);
  }
  const all = await call(s.url, 'GET', '/v1/pushes', { token: f.admin });
  t.same(all.body.data.map((p: any) => p.id), [...ids].reverse(), 'newest first');
  t.equal(all.body.meta.hasMore, false);
  const filtered = await call(s.url, 'GET', `/v1/pushes?appId=${f.app.id}`, { token: f.admin });
  t.same(filtered.body.data.map((p: any) => p.id), [ids[2], ids[0]]);
  const p1 = await call(s.url, 'GET', '/v1/pushes?limit=2', { token: f.admin });
  t.same(p1.body.data.map((p: any) => p.id), [ids[2], ids[1]]);
  t.equal(p1.body.meta.hasMore, true);
  const p2 = await call(s.url, 'GET', `/v1/pushes?limit=2&cursor=${p1.body.meta.nextCursor}`, { token: f.admin });
  t.same(p2.body.data.map((p: any) => p.id), [ids[0]]);
  t.equal(p2.body.meta.nextCursor, null);
  expectError(t, await call(s.url, 'GET', '/v1/pushes?cursor=bogus', { token: f.admin }), 422, 'validation_failed', 'forged cursor', 'cursor');
  expectError(t, await call(s.url, 'GET', `/v1/pushes?appId=${'x'.repeat(201)}`, { token: f.admin }), 422, 'validation_failed', 'appId over 200', 'appId');
});

t.test('a version a crashed process left compiling is compiled again once its lease ends', { skip: !process.env.DATABASE_URL && 'needs DATABASE_URL' }, async (t) => {
  const jb = await upload(s, admin, await bundle(journeySource('recovered')));
  const r = await push(s, admin, orgId, appId, manifest({ journeys: [journeyEntry('recovered', jb)], source: srcDigest }));
  const done = await compiled(r.body.data.id);
  const v = done.body.data.versions[0];
  t.equal(v.status, 'ready');
  const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await db.connect();
  try {
    // What a process that claimed the version and died leaves: compiling, an expired lease.
    await db.query(`UPDATE versions SET status = 'compiling', module_code = NULL, module_digest = NULL, compiled_at = NULL,
      lease_until = now() - interval '1 second', attempts = 1 WHERE id = $1`, [v.id]);
  } finally { await db.end(); }
  t.equal((await getPush(r.body.data.id)).body.data.compiledEntries, 0, 'left compiling');
  const again = await compiled(r.body.data.id);
  t.equal(again.body.data.versions[0].status, 'ready', 'compiled again');
  t.equal(again.body.data.versions[0].moduleDigest, v.moduleDigest, 'to the same module');
});
