// The loop both outbox senders (webhook deliveries, e-mail) run: one `pass` at a time (write
// outcomes, claim due rows, start sends), again at once while a pass says more is due, otherwise
// after the poll interval or the earliest retry this process scheduled, whichever comes first. A
// wake (work enqueued in this process, a send finished) cuts the rest short; a wake that arrives
// during a pass is remembered, so the loop never sleeps past it.
import type { Logger } from '../../lib/log.js';

export interface PassLoopOptions {
  log: Logger;
  /** Named in the warning a failed pass logs ("webhook sender", "e-mail sender"). */
  name: string;
  pollMs: number;
  /** One round of work; true when more is due now. A throw is logged and the loop goes on. */
  pass(): Promise<boolean>;
}

export interface PassLoop {
  /** Cuts the current rest short (or the next one, when a pass is running). */
  wake(): void;
  /** A retry this process scheduled at `at` (ms since the epoch): the loop rests no longer. */
  dueAt(at: number): void;
  readonly closed: boolean;
  /** Ends the loop after the pass in progress. */
  stop(): Promise<void>;
}

export function startPassLoop(o: PassLoopOptions): PassLoop {
  let closed = false;
  let nextDue = Infinity;
  let wakeUp: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let kicked = false;

  const wake = () => { kicked = true; const w = wakeUp; wakeUp = undefined; if (timer) clearTimeout(timer); w?.(); };
  const rest = (ms: number) => (kicked ? Promise.resolve() : new Promise<void>((resolve) => {
    wakeUp = resolve;
    timer = setTimeout(wake, Math.max(0, ms));
  }));

  const done = (async () => {
    // The first pass runs after this function returned: `pass` may use the loop it returns.
    await Promise.resolve();
    while (!closed) {
      kicked = false;
      let more = false;
      try { more = await o.pass(); } catch (err) { o.log.warn(`${o.name} pass failed`, { err: String(err) }); }
      if (closed) break;
      if (more) continue;
      const now = Date.now();
      if (nextDue <= now) nextDue = Infinity;
      await rest(Math.min(o.pollMs, nextDue - now));
      if (nextDue <= Date.now()) nextDue = Infinity;
    }
  })();

  return {
    wake,
    dueAt(at) { nextDue = Math.min(nextDue, at); },
    get closed() { return closed; },
    async stop() { closed = true; wake(); await done; },
  };
}

/**
 * At close: sends in flight get `graceMs` to finish, then `cut` ends the rest (their outcomes
 * become releases, so another run sends them again); resolves once every send has settled.
 */
export async function settleSends(sends: Set<Promise<void>>, graceMs: number, cut: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((r) => { timer = setTimeout(r, graceMs); });
  await Promise.race([Promise.allSettled([...sends]), grace]);
  clearTimeout(timer);
  cut();
  await Promise.allSettled([...sends]);
}

/** The longest wait before a retry, whatever the backoff or a receiver's Retry-After says. */
export const MAX_RETRY_DELAY_MS = 24 * 3600_000;

/** Delay after failed attempt `n` (1-based): base * 4^(n-1), +-20 %, at most a day. */
export function backoffDelay(baseMs: number, n: number, random = Math.random): number {
  return Math.min(MAX_RETRY_DELAY_MS, baseMs * 4 ** (n - 1)) * (0.8 + 0.4 * random());
}
