// Counts of what the pipeline drops or collapses on purpose, so that a loss never goes unseen:
// each process adds to its counter and stores the sums in Postgres every few seconds (one
// statement, nothing when nothing happened); the reconciliation route reads them.
import type pg from 'pg';
import type { Logger } from '../lib/log.js';
import { startPeriodic, type Periodic } from './periodic.js';

export const DROP_REASONS = {
  /** Stream messages JetStream refused as repeats of a message id it had seen (exact retries). */
  duplicate_messages: 'stream messages refused as repeats within the duplicate window',
  /** Redelivered track calls answered from their stored answer; the re-emitted event collapses in ClickHouse. */
  replayed_events: 'events re-emitted by redelivered track calls found stored (collapse by event id)',
  /** Calls skipped because their caller had already been answered 503 (not acknowledged). */
  abandoned_calls: 'calls not processed because their caller had been answered 503',
  /** Events landed again at start (answered before a stop, maybe landed already). */
  relanded_events: 'events landed again at start (collapse by event id)',
} as const;
export type DropReason = keyof typeof DROP_REASONS;

/** What streams and engines are given: adding never waits and never throws. */
export interface DropSink { add(reason: DropReason, n?: number): void }

export class DropCounter implements DropSink {
  private pending = new Map<DropReason, number>();
  /** Everything this process added since it started (for metrics). */
  readonly totals = new Map<DropReason, number>();
  private readonly periodic: Periodic;

  constructor(private readonly pool: pg.Pool, private readonly log: Logger, intervalMs = 5_000) {
    this.periodic = startPeriodic(intervalMs, () => this.flush(), log, 'storing drop counts failed');
  }

  add(reason: DropReason, n = 1): void {
    if (n <= 0) return;
    this.pending.set(reason, (this.pending.get(reason) ?? 0) + n);
    this.totals.set(reason, (this.totals.get(reason) ?? 0) + n);
  }

  /** Stores what was added since the last flush; on failure it is kept for the next one. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const taken = this.pending;
    this.pending = new Map();
    try {
      await this.pool.query(
        `INSERT INTO drop_counts (reason, count) SELECT * FROM unnest($1::text[], $2::bigint[])
         ON CONFLICT (reason) DO UPDATE SET count = drop_counts.count + EXCLUDED.count, last_at = now()`,
        [[...taken.keys()], [...taken.values()]]);
    } catch (err) {
      for (const [k, v] of taken) this.pending.set(k, (this.pending.get(k) ?? 0) + v);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.periodic.close();
    await this.flush().catch((err) => this.log.warn('storing drop counts failed', { err: String(err) }));
  }
}

export interface DropCount { reason: DropReason; description: string; count: number; firstAt: string | null; lastAt: string | null }

/** Every reason with its stored count (0 when it never happened), in a fixed order. */
export async function readDropCounts(pool: pg.Pool): Promise<DropCount[]> {
  const r = await pool.query<{ reason: string; count: string; first_at: Date; last_at: Date }>('SELECT reason, count, first_at, last_at FROM drop_counts');
  const stored = new Map(r.rows.map((x) => [x.reason, x]));
  return (Object.keys(DROP_REASONS) as DropReason[]).map((reason) => {
    const x = stored.get(reason);
    return {
      reason, description: DROP_REASONS[reason], count: x ? Number(x.count) : 0,
      firstAt: x ? new Date(x.first_at).toISOString() : null, lastAt: x ? new Date(x.last_at).toISOString() : null,
    };
  });
}
