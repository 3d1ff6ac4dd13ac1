// A background task run every `intervalMs`, never two passes at once; close() waits for the one
// running. Failures are logged and the next tick tries again.
import type { Logger } from '../lib/log.js';

export interface Periodic { close(): Promise<void> }

export function startPeriodic(intervalMs: number, pass: () => Promise<unknown>, log: Logger, failure: string): Periodic {
  let running: Promise<unknown> | undefined;
  let closed = false;
  const timer = setInterval(() => {
    if (running || closed) return;
    running = pass()
      .catch((err) => log.warn(failure, { err: String(err) }))
      .finally(() => { running = undefined; });
  }, intervalMs);
  timer.unref();
  return { async close() { closed = true; clearInterval(timer); await running; } };
}
