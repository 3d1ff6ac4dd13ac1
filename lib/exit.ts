// Exiting when a graceful stop ran out of time. process.exit() waits for every worker thread to
// stop, and a thread blocked in native code (a synchronous read that never returns, a native
// library's call that never comes back) cannot be stopped: measured on Node 20, process.exit(1)
// with such a thread still hung 10 s later, and only a signal ended the process. So a watchdog
// process is started first: it holds a pipe from this process, which closes when this process
// is gone; if that has not happened after `graceMs`, it sends SIGKILL. The pipe, not the pid, says
// whether this process still runs, so a reused pid is never killed.
import { spawn } from 'node:child_process';

const WATCHDOG = `
const [pid, ms] = process.argv.slice(1).map(Number);
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
setTimeout(() => { try { process.kill(pid, 'SIGKILL'); } catch {} process.exit(0); }, ms);
`;

/** Exits with `code`; if the exit has not finished after `graceMs`, the process is killed (SIGKILL). */
export function exitOrKill(code: number, graceMs = 3000): never {
  try {
    const dog = spawn(process.execPath, ['-e', WATCHDOG, String(process.pid), String(graceMs)], {
      stdio: ['pipe', 'ignore', 'ignore'], detached: true, env: { PATH: process.env.PATH ?? '' },
    });
    dog.on('error', () => {});
    dog.unref();
  } catch {
    // No watchdog (no process could be started): exit as before.
  }
  process.exit(code);
}
