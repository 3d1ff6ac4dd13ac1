// Building a project's files: self-contained, deterministic bundles (the same bytes from any
// checkout path or install path), dependencies from the project's own node_modules, and the
// definition read back from the bundle; the scaffold type-checks against the exported SDK types.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bundleFiles, readDefinition, SDK_FILE } from '../cli/project/index.js';
import { ROOT, initProject, journeyFile } from './helpers/cli.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'local bundling');

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hw-build-'));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

const FILES = {
  'journeys/greet.js': `import { journey } from 'headwater/sdk';
import { pick } from 'tiny-pick';
import { TEMPLATE } from '../lib/names.js';
export default journey({ key: 'greet', trigger: { segment: 'seg_1', on: 'entered' }, purpose: 'p', tags: ['x'] }, async (ctx) => {
  await ctx.email.send(TEMPLATE, pick(ctx.event.properties, 'name'));
});
`,
  'lib/names.ts': `export const TEMPLATE: string = 'hello';\n`,
  'node_modules/tiny-pick/package.json': JSON.stringify({ name: 'tiny-pick', version: '1.0.0', main: 'index.js' }),
  'node_modules/tiny-pick/index.js': `exports.pick = (o, k) => ({ [k]: o[k] });\n`,
};

t.test('bundles inline the SDK and node_modules dependencies, identically from any path', async (t) => {
  const a = project(FILES);
  const b = project(FILES);
  t.teardown(() => { rmSync(a, { recursive: true, force: true }); rmSync(b, { recursive: true, force: true }); });
  const files = [{ file: 'journeys/greet.js', kind: 'journey' as const }];
  const ra = await bundleFiles(a, files, SDK_FILE);
  const rb = await bundleFiles(b, files, SDK_FILE);
  if (!ra.ok || !rb.ok) { t.fail(`build failed: ${JSON.stringify([ra, rb])}`); return; }
  const code = ra.value[0]!.code;
  t.equal(code, rb.value[0]!.code, 'the same bytes from two checkouts');
  t.notMatch(code, /^\s*import\s/m, 'no import left: self-contained');
  t.notMatch(code, a, 'the project path does not appear');
  t.notMatch(code, SDK_FILE, "the SDK's install path does not appear");
  t.match(code, /exports\.pick|pick = /, 'the node_modules dependency is inlined');
  t.match(code, /export\s*\{\s*\w+ as default\s*\}/, 'an ESM default export');

  const def = await readDefinition(ra.value[0]!);
  t.same(def, { ok: true, value: { kind: 'journey', key: 'greet', options: { key: 'greet', trigger: { segment: 'seg_1', on: 'entered' }, purpose: 'p', tags: ['x'] } } });
});

t.test('a definition that is not plain JSON, or loops at load, is refused in one line', async (t) => {
  const dir = project({
    'journeys/fn.js': `import { journey } from 'headwater/sdk';\nconst o = { key: 'fn', trigger: { event: 'e' }, purpose: 'p' }; o.self = o;\nexport default journey(o, async () => {});\n`,
    'journeys/spin.js': `import { journey } from 'headwater/sdk';\nwhile (true) {}\nexport default journey({ key: 'spin', trigger: { event: 'e' }, purpose: 'p' }, async () => {});\n`,
  });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await bundleFiles(dir, [{ file: 'journeys/fn.js', kind: 'journey' }, { file: 'journeys/spin.js', kind: 'journey' }], SDK_FILE);
  if (!r.ok) { t.fail(r.error); return; }
  const [fn, spin] = await Promise.all(r.value.map(readDefinition));
  t.match(fn, { ok: false, error: /^journeys\/fn\.js: the journey options must be plain JSON: .*circular/i });
  t.match(spin, { ok: false, error: /^journeys\/spin\.js: evaluating it failed: Script execution timed out/ });
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
