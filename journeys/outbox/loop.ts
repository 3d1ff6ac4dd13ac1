// The loop both outbox senders (webhook deliveries, e-mail) run: one `pass` at a time (write
// outcomes, claim due rows, start sends), again at once while a pass says more is due, otherwise
// after a rest. A wake (work enqueued in this process or, told through `wakes`, in another; a send
// finished) cuts the rest short; a wake that arrives during a pass is remembered, so the loop never
// sleeps past it.
// While `wakes` listen, every enqueue wakes the loop, so it does not poll: going idle with nothing
// held, it asks the store when the earliest pending row falls due (retry time or lease expiry) and
// rests until then, a wake, or `wakes.idleMs` at most (docs/journeys-runtime.md, "Idle"). Otherwise it
// rests the poll interval, or until the earliest retry this process scheduled.
import type { Logger } from '../../lib/log.js';
import type { WakeTopic, Wakes } from '../../pipeline/wakes.js';

export interface PassLoopOptions {
  log: Logger;
  /** Named in the warning a failed pass logs ("webhook sender", "e-mail sender"). */
  name: string;
  pollMs: number;
  /** One round of work; true when more is due now. A throw is logged and the loop goes on. */
  pass(): Promise<boolean>;
  wakes: Wakes;
  /** The loop's work, told by other processes. */
  topic: WakeTopic;
  /** Rows this process holds (claimed, in flight, outcomes unwritten): their ends wake the loop. */
  busy(): boolean;
  /** Milliseconds (store clock) until the earliest pending row this process could claim is due; null when none. */
  nextDue(): Promise<number | null>;
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

  const off = o.wakes.on(o.topic, wake);
  const done = (async () => {
    // The first pass runs after this function returned: `pass` may use the loop it returns.
    await Promise.resolve();
    while (!closed) {
      kicked = false;
      let more = false;
      let failed = false;
      try { more = await o.pass(); } catch (err) { failed = true; o.log.warn(`${o.name} pass failed`, { err: String(err) }); }
      if (closed) break;
      if (more) continue;
      let ms = o.pollMs;
      if (o.wakes.listening && !failed) {
        ms = o.wakes.idleMs;
        if (!o.busy()) {
          try {
            const due = await o.nextDue();
            // Due already, yet not claimed by the pass just run: it fell due meanwhile, or it
            // cannot be taken now (excluded); look again after the poll interval.
            if (due !== null) ms = Math.min(ms, due <= 0 ? o.pollMs : due);
          } catch (err) { ms = o.pollMs; o.log.warn(`${o.name} pass failed`, { err: String(err) }); }
          if (closed) break;
        }
      }
      const now = Date.now();
      if (nextDue <= now) nextDue = Infinity;
      await rest(Math.min(ms, nextDue - now));
      if (nextDue <= Date.now()) nextDue = Infinity;
    }
  })();

  return {
    wake,
    dueAt(at) { nextDue = Math.min(nextDue, at); },
    get closed() { return closed; },
    async stop() { closed = true; off(); wake(); await done; },
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
