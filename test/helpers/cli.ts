// The `headwater` command spawned as a user runs it (through bin/), and journey-project fixtures
// for the project tool's tests.
import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SCAFFOLD } from '../../cli/project/index.js';

export const BIN = fileURLToPath(new URL('../../../bin/headwater.js', import.meta.url));
/** The package root (what `npm install headwater` would put in a project's node_modules). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Run { code: number; stdout: string; stderr: string }

export function hw(args: string[], env: Record<string, string> = {}): Promise<Run> {
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
export function oneLineFailure(t: Test, r: Run, pattern: RegExp, what: string) {
  t.not(r.code, 0, `${what}: non-zero exit`);
  const lines = r.stderr.trimEnd().split('\n');
  t.equal(lines.length, 1, `${what}: one line (${r.stderr})`);
  t.match(lines[0], /^headwater: /, `${what}: prefixed`);
  t.match(lines[0], pattern, `${what}: says what is wrong`);
  t.notMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
  t.equal(r.stdout, '', `${what}: nothing on stdout`);
}

const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));

export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export async function initProject(t: Test): Promise<string> {
  const parent = tmp('hw-proj-');
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const dir = join(parent, 'p');
  const r = await hw(['init', dir]);
  t.equal(r.code, 0, `init exits 0 (${r.stderr})`);
  return dir;
}

/** The files init writes, written in process (init itself is tested through the command). */
export function scaffold(dir: string): string {
  for (const [rel, text] of Object.entries(SCAFFOLD)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

export const journeyFile = (key: string, body = `await ctx.sleep('1s');`, purpose = 'onboarding') => `import { journey } from 'headwater/sdk';
export default journey({ key: '${key}', trigger: { event: 'signed_up' }, purpose: '${purpose}' }, async (ctx) => {
  ${body}
});
`;
