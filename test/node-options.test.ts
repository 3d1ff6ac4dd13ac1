// The test harness's NODE_OPTIONS handling (helpers/node-options.ts, used by helpers/unhooked.ts):
// split as Node splits it, and joined back so that Node reads the same options.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { joinNodeOptions, splitNodeOptions } from './helpers/node-options.js';

const cases: Array<[string, string[]]> = [
  ['', []],
  ['--a --b', ['--a', '--b']],
  ['  --a \t --b  ', ['--a', '--b']],
  ['--require "/dir with space/x.js"', ['--require', '/dir with space/x.js']],
  ['--import="/a b/c.mjs" --x', ['--import=/a b/c.mjs', '--x']],
  ['"--title=say \\"hi\\""', ['--title=say "hi"']],
  ['"a\\\\b"', ['a\\b']],
];

t.test('split as Node does, and joined back to the same options', async (t) => {
  for (const [value, want] of cases) {
    t.same(splitNodeOptions(value), want, JSON.stringify(value));
    t.same(splitNodeOptions(joinNodeOptions(want)), want, `round trip of ${JSON.stringify(want)}`);
  }
});

t.test('Node itself reads the joined value: a preload under a path with spaces runs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw node options '));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'pre load.cjs');
  writeFileSync(file, 'process.stdout.write("preloaded ");');
  const out = execFileSync(process.execPath, ['-e', 'process.stdout.write("main")'], {
    env: { ...process.env, NODE_OPTIONS: joinNodeOptions(['--require', file]) }, encoding: 'utf8',
  });
  t.equal(out, 'preloaded main');
});

t.test('this test process runs without tap\'s loader hook (helpers/unhooked.ts)', async (t) => {
  t.notMatch(process.execArgv.join(' '), /@tapjs[\\/]/);
  t.notMatch(process.env.NODE_OPTIONS ?? '', /@tapjs[\\/]/);
});
