// `headwater serve` as a user starts it: a child process on an ephemeral port, resolved once it
// prints its URL; a start that fails rejects with its exit code, stdout and stderr.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../../bin/headwater.js', import.meta.url));

/**
 * Node flags a spawned server gets from its test process: the suite runs Node with
 * `--liftoff-only` (package.json "tap"), which keeps V8 from optimising embedded Postgres's
 * WebAssembly in the background on every short-lived server (~1.2 s of CPU per start). Only the
 * compiler tier changes, never behaviour.
 */
export const NODE_ARGS = process.execArgv.filter((a) => a === '--liftoff-only');

export interface Proc {
  child: ChildProcess; url: string; out: string;
  /** Everything the process printed so far (stdout, then stderr). */
  printed(): string;
}
export interface StartFailure extends Error { code: number | null; stderr: string; stdout: string }

export interface ServeOpts {
  startMs?: number;
  /** Start an empty embedded data directory from migrated stores (helpers/seed.ts); default true. */
  seed?: boolean;
}

/** `env` is laid over the test's environment (a generated operator token unless it sets one). */
export async function serveBin(dataDir: string, env: Record<string, string | undefined> = {}, o: ServeOpts = {}): Promise<Proc> {
  const startMs = o.startMs ?? 120_000;
  if (o.seed !== false && !('DATABASE_URL' in env ? env.DATABASE_URL : process.env.DATABASE_URL)) {
    const { seedEmbedded } = await import('./server.js');
    await seedEmbedded(dataDir);
  }
  const child = spawn(process.execPath, [...NODE_ARGS, BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
    env: { ...process.env, HEADWATER_OPERATOR_TOKEN: '', HEADWATER_LOG_LEVEL: 'warn', HEADWATER_STREAM_PREFIX: `c${process.pid}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no start in ${startMs / 1000} s: ${out} ${err}`)); }, startMs);
    child.stdout!.on('data', (b) => {
      out += b;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1]!, out, printed: () => `${out}\n${err}` }); }
    });
    child.stderr!.on('data', (b) => { err += b; });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`exited ${code}: ${err}`), { code, stderr: err, stdout: out }) as StartFailure);
    });
  });
}

/**
 * SIGTERM, then the exit: status 0 resolves; any other status (1: the service's shutdown deadline
 * passed), or no exit within `ms`, rejects with what the process printed (it names the part that
 * was still closing).
 */
export const stopBin = (p: Proc, o: { ms?: number } = {}) => new Promise<void>((resolve, reject) => {
  const ms = o.ms ?? 40_000;
  if (p.child.exitCode !== null || p.child.signalCode !== null) { resolve(); return; }
  const timer = setTimeout(() => {
    p.child.kill('SIGKILL');
    reject(new Error(`no exit ${ms / 1000} s after SIGTERM: ${p.printed()}`));
  }, ms);
  p.child.once('exit', (code, signal) => {
    clearTimeout(timer);
    if (code === 0 || signal === 'SIGTERM') resolve();
    else reject(new Error(`stopped with status ${code ?? signal}: ${p.printed()}`));
  });
  p.child.kill('SIGTERM');
});
