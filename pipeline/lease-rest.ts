// The rest of a sole process's background loop (embedded: this process is the database's only
// user, so every change it must react to is made here and wakes the loop): no polling; after a
// pass it asks the store when the earliest lease ends (work given back or left unrecorded) and
// looks again then, IDLE_MS at most (docs/journeys-runtime.md, "Idle"). A failed pass looks again
// after the poll interval. The compiler, the eraser and the outbox senders rest this way.
import type pg from 'pg';

/** Sole: the longest rest between looks, a safety net only. */
export const IDLE_MS = 60_000;

export interface LeaseRest {
  /** After a pass: rest until the earliest lease ends (`ok`), or the poll interval (a failed pass). */
  after(ok: boolean): Promise<void>;
  /** Ends the pending rest; nothing is scheduled after. */
  close(): void;
}

/**
 * `leaseEndMs`: SQL answering `ms`, milliseconds (store clock) until the earliest lease of the
 * loop's rows ends, null when none is held. `look` runs the next pass.
 */
export function leaseRest(o: { pool: pg.Pool; leaseEndMs: string; pollMs: number; look: () => void }): LeaseRest {
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const later = (ms: number) => {
    clearTimeout(timer);
    if (closed) return;
    timer = setTimeout(o.look, Math.max(10, Math.min(IDLE_MS, ms)));
    timer.unref();
  };
  const schedule = async () => {
    const r = await o.pool.query<{ ms: number | null }>(o.leaseEndMs);
    later(r.rows[0]?.ms ?? IDLE_MS);
  };
  return {
    async after(ok) {
      if (ok) await schedule().catch(() => later(o.pollMs));
      else later(o.pollMs);
    },
    close() { closed = true; clearTimeout(timer); },
  };
}
