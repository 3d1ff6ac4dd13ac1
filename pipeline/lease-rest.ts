// The rest of a background loop between passes (docs/journeys-runtime.md, "Idle"). While the loop's
// `Wakes` listen (embedded: always; on a shared server: while the LISTEN connection is up), every
// piece of work it must react to wakes it, so it does not poll: after a pass it asks the store when
// the earliest lease of its rows ends (work given back, or held by a process that died) and looks
// again then, `wakes.idleMs` at most. Otherwise, and after a failed pass, it looks again after the
// poll interval. The compiler and the eraser rest this way.
import type pg from 'pg';
import type { WakeTopic, Wakes } from './wakes.js';

export interface LeaseRest {
  /** After a pass: rest until the earliest lease ends (`ok`, listening), or the poll interval. */
  after(ok: boolean): Promise<void>;
  /** Ends the pending rest and the subscription; nothing is scheduled after. */
  close(): void;
}

export interface LeaseRestOptions {
  pool: pg.Pool;
  /** SQL answering `ms`: milliseconds (store clock) until the earliest lease of the loop's rows ends, null when none is held. */
  leaseEndMs: string;
  pollMs: number;
  wakes: Wakes;
  /** The loop's work, told by other processes: runs `look`. */
  topic: WakeTopic;
  /** Runs the next pass. */
  look: () => void;
}

export function leaseRest(o: LeaseRestOptions): LeaseRest {
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const later = (ms: number) => {
    clearTimeout(timer);
    if (closed) return;
    timer = setTimeout(o.look, Math.max(10, ms));
    timer.unref();
  };
  const schedule = async () => {
    const r = await o.pool.query<{ ms: number | null }>(o.leaseEndMs);
    const ms = r.rows[0]?.ms;
    later(Math.min(o.wakes.idleMs, ms ?? Infinity));
  };
  const off = o.wakes.on(o.topic, () => { if (!closed) o.look(); });
  return {
    async after(ok) {
      if (ok && o.wakes.listening) await schedule().catch(() => later(o.pollMs));
      else later(o.pollMs);
    },
    close() { closed = true; clearTimeout(timer); off(); },
  };
}
