// The system-event outbox: transitions store their events here in the transaction that caused
// them; whoever committed publishes them and clears the rows. A crash between commit and publish
// leaves rows behind, which the relay publishes (ClickHouse collapses a duplicate by event id).
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { tx } from '../store/postgres.js';
import { longestRest, type Wakes } from '../wakes.js';
import type { EventRecord } from '../types.js';

/**
 * Clears the rows of events handed over or landed. Best effort, so it never throws: a row left
 * behind is published again by the relay, and ClickHouse collapses the copy.
 */
export async function clearOutbox(pool: pg.Pool, ids: string[], log: Logger): Promise<void> {
  if (ids.length === 0) return;
  await pool.query('DELETE FROM event_outbox WHERE id = ANY($1)', [ids])
    .catch((err: unknown) => log.warn('outbox clear failed', { err: String(err) }));
}

export interface OutboxRelay { close(): Promise<void> }

/**
 * Rows older than `ageMs` are orphans: publishes them, at most 1,000 per pass. After a pass it asks
 * when the oldest row left becomes an orphan and looks again then, or after `wakes.idleMs` at most
 * while the wakes listen (nobody tells of orphans: a crash makes them, and this bound finds those
 * of another process), `intervalMs` when they do not. An idle embedded server runs one statement a
 * minute (docs/journeys-runtime.md, "Idle").
 */
export function startOutboxRelay(o: { pool: pg.Pool; publish(events: EventRecord[]): Promise<void>; log: Logger; wakes: Wakes; intervalMs?: number; ageMs?: number }): OutboxRelay {
  const ageMs = o.ageMs ?? 30_000;
  const intervalMs = o.intervalMs ?? 5_000;
  const pass = async () => {
    const n = await tx(o.pool, async (c) => {
      const r = await c.query<{ id: string; payload: string }>(
        `SELECT id, payload FROM event_outbox WHERE created_at < now() - make_interval(secs => $1)
         ORDER BY created_at LIMIT 1000 FOR UPDATE SKIP LOCKED`, [ageMs / 1000]);
      if (r.rows.length === 0) return 0;
      await o.publish(r.rows.map((x) => JSON.parse(x.payload) as EventRecord));
      await c.query('DELETE FROM event_outbox WHERE id = ANY($1)', [r.rows.map((x) => x.id)]);
      return r.rows.length;
    });
    if (n) o.log.info('outbox relay published orphaned system events', { count: n });
    return n;
  };

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const next = async (): Promise<number> => {
    // A full batch: more orphans wait now.
    if (await pass() === 1000) return 0;
    if (!o.wakes.listening) return intervalMs;
    const r = await o.pool.query<{ ms: number | null }>(
      `SELECT (EXTRACT(EPOCH FROM min(created_at) - now()) * 1000)::float8 AS ms FROM event_outbox`);
    const cap = longestRest(o.wakes, intervalMs);
    const ms = r.rows[0]?.ms;
    return ms == null ? cap : Math.min(cap, Math.max(intervalMs, ms + ageMs));
  };
  const tick = () => {
    running = next()
      .catch((err) => { o.log.warn('outbox relay failed', { err: String(err) }); return intervalMs; })
      .then((ms) => { if (!closed) { timer = setTimeout(tick, ms); timer.unref(); } });
  };
  tick();
  return { async close() { closed = true; clearTimeout(timer); await running; } };
}
