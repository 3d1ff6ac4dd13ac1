// The system-event outbox: transitions store their events here in the transaction that caused
// them; whoever committed publishes them and clears the rows. A crash between commit and publish
// leaves rows behind, which the relay publishes (ClickHouse collapses a duplicate by event id).
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { tx } from '../store/postgres.js';
import { startPeriodic } from '../periodic.js';
import type { EventRecord } from '../types.js';

export async function clearOutbox(pool: pg.Pool, ids: string[]): Promise<void> {
  if (ids.length) await pool.query('DELETE FROM event_outbox WHERE id = ANY($1)', [ids]);
}

export interface OutboxRelay { close(): Promise<void> }

/** Rows older than `ageMs` are orphans: publishes them, at most 1,000 per pass, every `intervalMs`. */
export function startOutboxRelay(o: { pool: pg.Pool; publish(events: EventRecord[]): Promise<void>; log: Logger; intervalMs?: number; ageMs?: number }): OutboxRelay {
  const pass = () => tx(o.pool, async (c) => {
    const r = await c.query<{ id: string; payload: string }>(
      `SELECT id, payload FROM event_outbox WHERE created_at < now() - make_interval(secs => $1)
       ORDER BY created_at LIMIT 1000 FOR UPDATE SKIP LOCKED`, [(o.ageMs ?? 30_000) / 1000]);
    if (r.rows.length === 0) return 0;
    await o.publish(r.rows.map((x) => JSON.parse(x.payload) as EventRecord));
    await c.query('DELETE FROM event_outbox WHERE id = ANY($1)', [r.rows.map((x) => x.id)]);
    return r.rows.length;
  });
  return startPeriodic(o.intervalMs ?? 5_000, async () => {
    const n = await pass();
    if (n) o.log.info('outbox relay published orphaned system events', { count: n });
  }, o.log, 'outbox relay failed');
}
