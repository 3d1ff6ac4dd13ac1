// The stop deadline's exit (lib/exit.ts, used by `headwater serve` and `headwater worker` when a
// graceful stop runs out of time): process.exit() waits for worker threads, and one blocked in
// native code never stops, so the process is killed once the exit has not finished in its grace.
// Real processes: a worker thread blocked reading a FIFO nobody writes, as a thread wedged in a
// native call would be.
import t from 'tap';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'process exit, no store');

const exitModule = fileURLToPath(new URL('../lib/exit.js', import.meta.url));

/** Runs `script`; one still running after 15 s is killed by the test (`stuck`), so a failure never hangs the suite. */
function run(script: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number; out: string; stuck: boolean }> {
  const t0 = Date.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let stuck = false;
  child.stdout.on('data', (d) => { out += d; });
  const timer = setTimeout(() => { stuck = true; child.kill('SIGKILL'); }, 15_000);
  return new Promise((resolve) => child.on('exit', (code, signal) => { clearTimeout(timer); resolve({ code, signal, ms: Date.now() - t0, out, stuck }); }));
}

t.test('a process whose exit hangs on a wedged worker thread is killed after the grace', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-exit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const wedged = `const fs = require('node:fs'); const fd = fs.openSync(${JSON.stringify(fifo)}, 'r'); fs.readSync(fd, Buffer.alloc(1));`;
  const r = await run(`
    import { Worker } from 'node:worker_threads';
    import { exitOrKill } from ${JSON.stringify(exitModule)};
    new Worker(${JSON.stringify(wedged)}, { eval: true, execArgv: [] });
    setTimeout(() => { console.log('exiting'); exitOrKill(1, 1000); }, 300);`);
  t.match(r.out, /exiting/, 'it reached the exit');
  t.notOk(r.stuck, 'not left running');
  t.equal(r.signal, 'SIGKILL', 'killed, where process.exit alone hangs');
  t.ok(r.ms < 8000, `within the grace and a little (${r.ms} ms)`);
});

t.test('a process that can exit exits with its status, before the grace', async (t) => {
  const r = await run(`
    import { exitOrKill } from ${JSON.stringify(exitModule)};
    setTimeout(() => exitOrKill(1, 5000), 100);`);
  t.equal(r.code, 1, 'status 1');
  t.equal(r.signal, null, 'not killed');
  t.ok(r.ms < 4000, `promptly (${r.ms} ms)`);
});
