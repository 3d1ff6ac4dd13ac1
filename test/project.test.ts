// The project tool as a user runs it: `headwater init`, `headwater push` (spawned through bin/),
// against a real service for the end-to-end parts (embedded, or PostgreSQL/NATS when set).
import t, { type Test } from 'tap';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync, readdirSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SCAFFOLD } from '../cli/project/index.js';
import { startServer, createAppFixture, call, poll, type TestServer, type AppFixture } from './helpers/server.js';

const BIN = fileURLToPath(new URL('../../bin/headwater.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Run { code: number; stdout: string; stderr: string }

function hw(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = { ...process.env };
  delete base.HEADWATER_TOKEN;
  delete base.HEADWATER_URL;
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b) => { stdout += b; });
  child.stderr.on('data', (b) => { stderr += b; });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })));
}

/** A failure is one line on stderr, prefixed, without a stack trace, and a non-zero exit. */
function oneLineFailure(t: Test, r: Run, pattern: RegExp, what: string) {
  t.not(r.code, 0, `${what}: non-zero exit`);
  const lines = r.stderr.trimEnd().split('\n');
  t.equal(lines.length, 1, `${what}: one line (${r.stderr})`);
  t.match(lines[0], /^headwater: /, `${what}: prefixed`);
  t.match(lines[0], pattern, `${what}: says what is wrong`);
  t.notMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
  t.equal(r.stdout, '', `${what}: nothing on stdout`);
}

const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function initProject(t: Test): Promise<string> {
  const parent = tmp('hw-proj-');
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const dir = join(parent, 'p');
  const r = await hw(['init', dir]);
  t.equal(r.code, 0, `init exits 0 (${r.stderr})`);
  return dir;
}

/** The files init writes, written in process (init itself is tested through the command). */
function scaffold(dir: string): string {
  for (const [rel, text] of Object.entries(SCAFFOLD)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

const journeyFile = (key: string, body = `await ctx.sleep('1s');`, purpose = 'onboarding') => `import { journey } from 'headwater/sdk';
export default journey({ key: '${key}', trigger: { event: 'signed_up' }, purpose: '${purpose}' }, async (ctx) => {
  ${body}
});
`;

t.test('--help on every command exits 0', async (t) => {
  for (const args of [['--help'], ['serve', '--help'], ['worker', '--help'], ['org', 'create', '--help'], ['init', '--help'], ['push', '--help'], ['push', '-h']]) {
    const r = await hw(args);
    t.equal(r.code, 0, `${args.join(' ')} exits 0`);
    t.ok(r.stdout.length > 40, `${args.join(' ')} prints help`);
  }
  t.match((await hw(['push', '--help'])).stdout, /--app APP_ID/);
});

t.test('init scaffolds a project and refuses a non-empty directory', async (t) => {
  const dir = await initProject(t);
  for (const f of ['headwater.json', 'tsconfig.json', 'journeys/welcome.ts', 'templates/welcome-email.ts', 'README.md']) t.ok(existsSync(join(dir, f)), f);
  t.same(JSON.parse(readFileSync(join(dir, 'headwater.json'), 'utf8')).purposes[0].default, 'denied');
  const welcome = readFileSync(join(dir, 'journeys/welcome.ts'), 'utf8');
  for (const call of ['ctx.profile.get', 'ctx.email.send', 'ctx.waitForEvent', 'ctx.sleep', 'ctx.traits.set', 'ctx.webhook.send']) t.match(welcome, call);

  oneLineFailure(t, await hw(['init', dir]), /not empty/, 'init into the project again');
  const file = join(dir, 'README.md');
  oneLineFailure(t, await hw(['init', file]), /not a directory/, 'init onto a file');
  oneLineFailure(t, await hw(['init']), /needs exactly one directory/, 'init without DIR');
  oneLineFailure(t, await hw(['init', dir, '--frobnicate']), /frobnicate/, 'init with an unknown option');
  t.same(readdirSync(join(dir, 'journeys')), ['welcome.ts'], 'the refused init wrote nothing');
});

t.test('the scaffold type-checks against the exported SDK types', async (t) => {
  const dir = await initProject(t);
  // As after `npm install --save-dev headwater` in the project.
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'headwater'), 'dir');
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(() => ({ code: 0, out: '' }), (e) => ({ code: e.code as number, out: `${e.stdout}${e.stderr}` }));
  t.equal(r.code, 0, `tsc -p passes: ${r.out}`);
  writeFileSync(join(dir, 'journeys/typo.ts'), journeyFile('typo', `await ctx.sleeep('1s');`));
  const bad = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(() => ({ code: 0, out: '' }), (e) => ({ code: e.code as number, out: `${e.stdout}` }));
  t.not(bad.code, 0, 'a misspelt ctx call is a type error');
  t.match(bad.out, /sleeep/);
});

t.test('push refuses locally, in one line, what cannot be pushed', async (t) => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const dir = await initProject(t);
  const push = (extra: string[] = [], d = dir) => hw(['push', d, '--app', 'app_x', '--url', url, ...extra], { HEADWATER_TOKEN: 'hwt_whatever' });

  oneLineFailure(t, await hw(['push', dir, '--token', 'x']), /--app APP_ID/, 'missing --app');
  oneLineFailure(t, await hw(['push', dir, '--app', 'app_x']), /credential/, 'missing token');
  oneLineFailure(t, await hw(['push', dir, '--app', 'app_x', '--token', 't', '--nope']), /nope/, 'unknown option');
  oneLineFailure(t, await push([], join(dir, 'missing')), /no such directory/, 'no such directory');
  oneLineFailure(t, await push([], join(dir, 'journeys')), /headwater\.json is missing/, 'not a project');
  oneLineFailure(t, await push(), /cannot reach the service at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/, 'service unreachable');

  const cases: Array<{ name: string; files: Record<string, string>; err: RegExp }> = [
    { name: 'a syntax error', files: { 'journeys/broken.ts': `import { journey } from 'headwater/sdk';\nexport default journey({ key: 'b', trigger: { event: 'e' }, purpose: 'onboarding' }, async (ctx) => {\n  await ctx.sleep('1s'\n});\n` }, err: /build failed: journeys\/broken\.ts:4:\d+: Expected/ },
    { name: 'an import that does not resolve', files: { 'journeys/dep.ts': `import x from 'left-pad-nowhere';\nconsole.log(x);\n${journeyFile('dep')}` }, err: /build failed: journeys\/dep\.ts:1:\d+: Could not resolve "left-pad-nowhere"/ },
    { name: 'a Node built-in (the sandbox has none)', files: { 'journeys/fs.ts': `import { readFileSync } from 'node:fs';\nconsole.log(readFileSync);\n${journeyFile('fs')}` }, err: /journeys\/fs\.ts:1:\d+: Could not resolve "node:fs"/ },
    { name: 'a file that does not export a journey', files: { 'journeys/none.ts': 'export default 42;\n' }, err: /journeys\/none\.ts: must default-export journey\(\.\.\.\) from 'headwater\/sdk'/ },
    { name: 'a template in the journeys folder', files: { 'journeys/tpl.ts': `import { template } from 'headwater/sdk';\nexport default template({ key: 't', sendClass: 'marketing', verifyLink: false }, () => ({ subject: '', html: '' }));\n` }, err: /journeys\/tpl\.ts: must default-export journey/ },
    { name: 'a throw while loading', files: { 'templates/boom.js': `throw new Error('boom at load');\n` }, err: /templates\/boom\.js: evaluating it failed: boom at load/ },
    { name: 'a 65-character key', files: { 'journeys/long.ts': journeyFile('k'.repeat(65)) }, err: /journeys\/long\.ts: key must NOT have more than 64 characters/ },
    { name: 'a 501-character description', files: { 'journeys/desc.ts': journeyFile('desc').replace(`purpose: 'onboarding'`, `purpose: 'onboarding', description: '${'d'.repeat(501)}'`) }, err: /journeys\/desc\.ts: description must NOT have more than 500 characters/ },
    { name: '21 tags', files: { 'journeys/tags.ts': journeyFile('tags').replace(`purpose: 'onboarding'`, `purpose: 'onboarding', tags: ${JSON.stringify(Array.from({ length: 21 }, (_, i) => `t${i}`))}`) }, err: /journeys\/tags\.ts: tags must NOT have more than 20 items/ },
    { name: 'a bad sendClass', files: { 'templates/bad.ts': `import { template } from 'headwater/sdk';\nexport default template({ key: 'bad', sendClass: 'bulk' as any, verifyLink: false }, () => ({ subject: '', html: '' }));\n` }, err: /templates\/bad\.ts: sendClass must be equal to one of the allowed values/ },
    { name: 'a purpose label over 50 characters', files: { 'headwater.json': JSON.stringify({ purposes: [{ key: 'onboarding', label: 'l'.repeat(51), default: 'denied' }] }) }, err: /headwater\.json: purposes\[0\]\.label must NOT have more than 50 characters/ },
    { name: 'an undeclared purpose', files: { 'journeys/p.ts': journeyFile('p', undefined, 'marketing') }, err: /journeys\/p\.ts: purpose "marketing" is not declared in headwater\.json/ },
    { name: 'two journeys with one key', files: { 'journeys/again.ts': journeyFile('welcome') }, err: /journeys\/welcome\.ts: journey key "welcome" is also the key of journeys\/again\.ts/ },
    { name: 'headwater.json that is not JSON', files: { 'headwater.json': '{ purposes: ' }, err: /headwater\.json: / },
  ];
  for (const c of cases) {
    const d = scaffold(join(dir, '..', `case-${cases.indexOf(c)}`));
    for (const [rel, text] of Object.entries(c.files)) writeFileSync(join(d, rel), text);
    oneLineFailure(t, await push([], d), c.err, c.name);
  }

  // 101 journeys: over the manifest limit of 100.
  const many = scaffold(join(dir, '..', 'many'));
  for (let i = 0; i < 100; i++) writeFileSync(join(many, 'journeys', `j${String(i).padStart(3, '0')}.ts`), journeyFile(`j${i}`));
  oneLineFailure(t, await push([], many), /project: journeys must NOT have more than 100 items/, '101 journeys');
});

// ---------------------------------------------------------------- against a real service

interface Ctx { s: TestServer; f: AppFixture }

const pushJson = async (t: Test, c: Ctx, dir: string, token: string) => {
  const r = await hw(['push', dir, '--app', c.f.app.id, '--json'], { HEADWATER_URL: c.s.url, HEADWATER_TOKEN: token });
  t.equal(r.code, 0, `push exits 0 (${r.stderr})`);
  t.equal(r.stderr, '', 'nothing on stderr (not a terminal, --json)');
  return JSON.parse(r.stdout);
};

t.test('init then push; unchanged push files nothing; a change files one version', async (t) => {
  const s = await startServer();
  t.teardown(() => s.close());
  const f = await createAppFixture(s);
  const c = { s, f };
  const dir = await initProject(t);

  const first = await pushJson(t, c, dir, f.admin);
  t.match(first.id, /\w+/);
  t.equal(first.appId, f.app.id);
  t.equal(first.orgId, f.org.org.id);
  t.equal(first.manifest.protocol, 3);
  t.match(first.manifest.sdk, /^headwater\/sdk@\d+\.\d+\.\d+/);
  t.same(first.manifest.purposes, [{ key: 'onboarding', label: 'Onboarding messages', default: 'denied' }]);
  t.same(first.versions.map((v: any) => `${v.kind}:${v.key}`).sort(), ['journey:welcome', 'template:welcome-email']);
  t.equal(first.totalEntries, 2);
  const j = first.manifest.journeys[0];
  t.same(j.trigger, { event: 'signed_up' });
  t.same(j.enrollment, { cooldown: '1d' });
  t.same(j.spine.map((s: any) => s.name), ['profile.get', 'send.email', 'traits.set', 'waitForEvent', 'if', 'traits.unset']);
  t.same(j.spine[3], { name: 'waitForEvent', detail: 'activated', timeout: '1d' });
  const tpl = first.manifest.templates[0];
  t.same({ sendClass: tpl.sendClass, verifyLink: tpl.verifyLink, unsubscribeLink: tpl.unsubscribeLink }, { sendClass: 'transactional', verifyLink: false, unsubscribeLink: false });

  // Every artifact the manifest names is stored; the source archive is the project.
  for (const d of [j.bundle, tpl.bundle, first.manifest.source]) t.equal((await call(s.url, 'HEAD', `/v1/artifacts/${d}`, { token: f.admin })).status, 200, `artifact ${d.slice(0, 8)} stored`);
  const src = await fetch(`${s.url}/v1/pushes/${first.id}/source`, { headers: { authorization: `Bearer ${f.admin}` } });
  t.equal(src.status, 200);
  const tgz = Buffer.from(await src.arrayBuffer());
  t.equal(createHash('sha256').update(tgz).digest('hex'), first.manifest.source, 'the stored source is the digest');
  t.match(gunzipSync(tgz).toString('latin1'), 'journeys/welcome.ts');

  // The service compiles what the tool built.
  const compiled = await poll(() => call(s.url, 'GET', `/v1/pushes/${first.id}`, { token: f.admin }), (r) => r.body?.data?.compiledEntries === 2, 30_000, 200);
  t.same(compiled.body.data.versions.map((v: any) => [v.key, v.status, v.error]).sort(), [['welcome', 'ready', null], ['welcome-email', 'ready', null]], 'both versions compile');

  // Unchanged: nothing uploaded, no version filed.
  const again = await pushJson(t, c, dir, f.admin);
  t.same(again.versions, [], 'no version for an unchanged project');
  t.equal(again.totalEntries, 0);
  t.equal(again.manifest.source, first.manifest.source, 'same source digest');
  const human = await hw(['push', dir, '--app', f.app.id], { HEADWATER_URL: s.url, HEADWATER_TOKEN: f.admin });
  t.equal(human.code, 0);
  t.match(human.stdout, /: 0 new versions; 0 artifacts uploaded, 3 already stored/, 'nothing uploaded');
  const list = await call(s.url, 'GET', `/v1/pushes?appId=${f.app.id}`, { token: f.admin });
  t.equal(list.status, 200);
  t.same(list.body.data.map((p: any) => p.versions.length), [0, 0, 2], 'versions filed per push, newest first');

  // One journey changed, pushed with the pipeline key: exactly one new version.
  const file = join(dir, 'journeys/welcome.ts');
  writeFileSync(file, readFileSync(file, 'utf8').replace(`await ctx.sleep('1h');`, `await ctx.sleep('2h');`));
  const changed = await hw(['push', dir, '--app', f.app.id], { HEADWATER_URL: s.url, HEADWATER_TOKEN: f.org.pipelineKey });
  t.equal(changed.code, 0, changed.stderr);
  t.match(changed.stdout, /: 1 new version; 2 artifacts uploaded, 1 already stored/, 'the new bundle and source are uploaded');
  t.match(changed.stdout, /journey\s+welcome\s/);
  const after = await call(s.url, 'GET', `/v1/pushes?appId=${f.app.id}`, { token: f.admin });
  t.same(after.body.data[0].versions.map((v: any) => v.key), ['welcome'], 'exactly one new version: the changed journey');
  t.not(after.body.data[0].manifest.journeys[0].bundle, j.bundle);
  t.equal(after.body.data[0].manifest.templates[0].bundle, tpl.bundle, 'the template bundle is the same bytes');
});

t.test('push: credentials and apps the service refuses are one line', async (t) => {
  const s = await startServer();
  t.teardown(() => s.close());
  const f = await createAppFixture(s);
  const dir = await initProject(t);
  const run = (token: string, app = f.app.id) => hw(['push', dir, '--app', app, '--url', s.url, '--token', token]);
  oneLineFailure(t, await run('hwt_not_a_real_token'), /refused the credential \(401 invalid_key/, 'unknown token');
  oneLineFailure(t, await run(f.org.apiKey), /refused the credential \(401 invalid_key/, 'an ingestion key');
  oneLineFailure(t, await run(f.admin, 'app_does_not_exist'), /POST \/v1\/pushes failed: 422 validation_failed/, 'an unknown app');
  const other = await createAppFixture(s);
  oneLineFailure(t, await run(f.admin, other.app.id), /422 validation_failed/, "another org's app");
});
