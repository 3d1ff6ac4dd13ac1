// Preloaded into every test process (tap's `node-arg` in package.json): runs the test file in a
// child process without tap's module-loader hook. On Node 20, tap's `@tapjs/processinfo` registers
// an off-thread loader that every module load of the process crosses, in every worker thread and
// in every process a test spawns (it rides along in NODE_OPTIONS): 3-4 s more CPU per test file and
// twice the CPU of each CLI child, a third of a CI pass (docs/development.md). The hook only feeds
// coverage and `tap --changed`, which this suite does not use.
//
// The process tap started (hooked) spawns the same node with the same file and flags minus the
// hook, hands it tap's IPC channel messages both ways (timeouts travel there) and its signals, and
// exits as the child did; it never loads the test file itself. Its stdout is the child's, so tap
// reads the child's TAP stream unchanged.
import { spawn } from 'node:child_process';
import { isMainThread } from 'node:worker_threads';
import { joinNodeOptions, splitNodeOptions } from './node-options.js';

const MARK = 'HEADWATER_TEST_UNHOOKED';
const HOOK = /@tapjs[\\/]/;

function runUnhooked(): Promise<never> {
  const execArgv = process.execArgv.filter((a) => !HOOK.test(a));
  const nodeOptions = joinNodeOptions(splitNodeOptions(process.env.NODE_OPTIONS ?? '').filter((a) => !HOOK.test(a)));
  // tap's hook re-adds itself to NODE_OPTIONS of every spawn; `env` sets it back after that.
  const child = spawn('env', [`NODE_OPTIONS=${nodeOptions}`, process.execPath, ...execArgv, ...process.argv.slice(1)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [MARK]: '1' },
  });
  process.on('message', (m) => { if (child.connected) child.send(m as object); });
  child.on('message', (m) => { process.send?.(m); });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGALRM'] as const) process.on(sig, () => { child.kill(sig); });
  child.on('error', (err) => { process.stderr.write(`unhooked test child: ${err.message}\n`); process.exit(1); });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return new Promise<never>(() => {});
}

if (isMainThread && process.env[MARK] !== '1' && process.execArgv.some((a) => HOOK.test(a))) {
  await runUnhooked();
} else if (isMainThread && process.env[MARK] === '1') {
  // The hooked parent is gone (killed after a timeout): do not outlive it.
  process.on('disconnect', () => process.exit(1));
}
