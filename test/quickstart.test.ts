// The README's quick start, run as written: every ```sh block of its "Quick start" section, in
// order, in one bash (set -euo pipefail) from the checkout, against a fresh embedded server started
// as a child process (in both CI modes: the guide is about the embedded default). Only where the
// server listens (HEADWATER_URL) and its data directory (HEADWATER_DATA_DIR) come from the test,
// through the environment variables the guide itself reads.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './helpers/cli.js';
import { serveBin, stopBin } from './helpers/serve.js';
import { EMBEDDED_ENV, embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'the README quick start starts an embedded server of its own');

/** The shell blocks of the README section `## Quick start`, in order. */
export function quickStartBlocks(readme: string): string[] {
  const start = readme.indexOf('\n## Quick start');
  if (start === -1) throw new Error('README has no "## Quick start" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function bash(script: string, env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  const base = { ...process.env };
  for (const k of ['HEADWATER_TOKEN', 'HEADWATER_OPERATOR_TOKEN', 'HEADWATER_URL', 'DATABASE_URL', 'NATS_URL', 'CLICKHOUSE_URL']) delete base[k];
  const child = spawn('bash', ['-c', script], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b) => { out += b; });
  child.stderr.on('data', (b) => { err += b; });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, out, err })));
}

t.test('the README quick start runs as written', async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  t.ok(readme.split('\n').length <= 260, 'the README stays a short guide');
  const blocks = quickStartBlocks(readme);
  t.ok(blocks.length >= 8, `the quick start has its steps (${blocks.length} blocks)`);

  const dir = mkdtempSync(join(tmpdir(), 'hw-quickstart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // The embedded default in both CI modes: no server URL reaches the child.
  const server = await serveBin(dir, { ...EMBEDDED_ENV });
  t.teardown(() => stopBin(server));

  // A guard so a step that hangs (a wait loop) fails the test instead of its timeout.
  const file = join(dir, 'quickstart.sh');
  writeFileSync(file, `set -euo pipefail\n${blocks.join('\n')}`);
  const r = await bash(`timeout 170 bash ${file}`, { HEADWATER_URL: server.url, HEADWATER_DATA_DIR: dir });
  t.equal(r.code, 0, `the quick start exits 0 (stderr: ${r.err.slice(-2000)})`);
  const out = r.out;
  t.match(out, /"traits":\{"name":"Ada Lovelace"/, 'identify answered the profile');
  t.match(out, /"event":"page_viewed"/, 'track answered the event');
  t.match(out, new RegExp(`${server.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/ui/#login=`), 'login printed the dashboard link');
  t.match(out, /journey\s+welcome\s+\S+\s+ready/, 'push waited and printed the journey ready');
  t.match(out, /journey welcome is on/, 'enable turned it on');
  t.match(out, /^execution exe_\S+ of journey welcome/m, 'the execution was found');
  t.match(out, /#1\s+email\.send/, 'its journal shows the e-mail step');
});
