// The stop deadline's exit (lib/exit.ts, used by `headwater serve` and `headwater worker` when a
// graceful stop runs out of time): process.exit() waits for worker threads, and one blocked in
// native code never stops, so the process is killed once the exit has not finished in its grace.
// Real processes: a worker thread blocked reading a FIFO nobody writes, as a thread wedged in a
// native call would be.
import t from 'tap';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embeddedPassOnly } from './helpers/modes.js';
import { until } from './helpers/server.js';

embeddedPassOnly(t, 'process exit, no store');

const exitModule = fileURLToPath(new URL('../lib/exit.js', import.meta.url));

/**
 * Starts `script`, which exits when a line comes on its stdin (`go`); one still running 15 s after
 * it started is killed by the test (`stuck`), so a failure never hangs the suite.
 */
function start(script: string) {
  const t0 = Date.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let stuck = false;
  child.stdout.on('data', (d) => { out += d; });
  const timer = setTimeout(() => { stuck = true; child.kill('SIGKILL'); }, 15_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number; out: string; stuck: boolean }>((resolve) =>
    child.on('exit', (code, signal) => { clearTimeout(timer); resolve({ code, signal, ms: Date.now() - t0, out, stuck }); }));
  return { pid: child.pid!, go: () => child.stdin.write('go\n'), exited };
}

/** Whether a thread of process `pid` waits in open() for a FIFO's other end (Linux /proc). */
function inFifoOpen(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).some((tid) => readFileSync(`/proc/${pid}/task/${tid}/wchan`, 'utf8').trim() === 'wait_for_partner');
  } catch { return false; }
}

t.test('a process whose exit hangs on a wedged worker thread is killed after the grace', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-exit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const wedged = `const fs = require('node:fs'); const fd = fs.openSync(${JSON.stringify(fifo)}, 'r'); fs.readSync(fd, Buffer.alloc(1));`;
  const p = start(`
    import { Worker } from 'node:worker_threads';
    import { exitOrKill } from ${JSON.stringify(exitModule)};
    new Worker(${JSON.stringify(wedged)}, { eval: true, execArgv: [] });
    process.stdin.once('data', () => { console.log('exiting'); exitOrKill(1, 1000); });`);
  t.ok(await until(() => inFifoOpen(p.pid), 10_000, 20), 'its worker thread is blocked in native code');
  const t0 = Date.now();
  p.go();
  const r = await p.exited;
  const ms = Date.now() - t0;
  t.match(r.out, /exiting/, 'it reached the exit');
  t.notOk(r.stuck, 'not left running');
  t.equal(r.signal, 'SIGKILL', 'killed, where process.exit alone hangs');
  t.ok(ms < 8000, `within the grace and a little (${ms} ms)`);
});

t.test('a process that can exit exits with its status, before the grace', async (t) => {
  const p = start(`
    import { exitOrKill } from ${JSON.stringify(exitModule)};
    process.stdin.once('data', () => exitOrKill(1, 5000));`);
  const t0 = Date.now();
  p.go();
  const r = await p.exited;
  const ms = Date.now() - t0;
  t.equal(r.code, 1, 'status 1');
  t.equal(r.signal, null, 'not killed');
  t.ok(ms < 4000, `promptly (${ms} ms)`);
});
