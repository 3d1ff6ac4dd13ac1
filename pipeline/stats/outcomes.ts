// Held and refused track calls, counted per (org, minute, outcome) in memory and added to
// `ingest_outcomes` every few seconds (one statement, nothing when nothing happened), like the drop
// counts (pipeline/drops.ts). A refused call writes nothing in its own transaction, so this is the
// only record of it; the events chart of the dashboard reads it (docs/dashboard.md).
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import type { CallResult, IngestCall } from '../types.js';
import { startPeriodic, type Periodic } from '../periodic.js';

export type HeldOrRefused = 'quarantined' | 'denied' | 'rejected';

/** What a track call's answer counts as on the chart; undefined for accepted, replayed or failed (5xx). */
export function trackOutcome(call: IngestCall, r: CallResult): HeldOrRefused | undefined {
  if (call.kind !== 'track') return undefined;
  if ('error' in r) {
    if (r.status >= 500 || r.status < 400) return undefined;
    return r.error.code === 'event_denied' || r.error.code === 'trait_denied' ? 'denied' : 'rejected';
  }
  return (r.data as { status?: unknown } | undefined)?.status === 'quarantined' ? 'quarantined' : undefined;
}

const MINUTE = 60_000;

export class OutcomeCounter {
  private pending = new Map<string, number>();
  private readonly periodic: Periodic;

  constructor(private readonly pool: pg.Pool, private readonly log: Logger, intervalMs = 2_000) {
    this.periodic = startPeriodic(intervalMs, () => this.flush(), log, 'storing ingest outcomes failed');
  }

  /** The gate's observer: never waits, never throws. */
  observe = (calls: IngestCall[], results: CallResult[] | undefined): void => {
    if (!results) return;
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]!;
      const o = trackOutcome(c, results[i]!);
      if (!o) continue;
      const k = `${c.orgId}\u0001${Math.floor(c.receivedAt / MINUTE) * MINUTE}\u0001${o}`;
      this.pending.set(k, (this.pending.get(k) ?? 0) + 1);
    }
  };

  /** Stores what was counted since the last flush; on failure it is kept for the next one. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const taken = this.pending;
    this.pending = new Map();
    const org: string[] = [], minute: string[] = [], outcome: string[] = [], n: number[] = [];
    for (const [k, v] of taken) {
      const [o, m, x] = k.split('\u0001');
      org.push(o!); minute.push(new Date(Number(m)).toISOString()); outcome.push(x!); n.push(v);
    }
    try {
      await this.pool.query(
        `INSERT INTO ingest_outcomes (org_id, minute, outcome, count)
         SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::bigint[])
         ON CONFLICT (org_id, minute, outcome) DO UPDATE SET count = ingest_outcomes.count + EXCLUDED.count`,
        [org, minute, outcome, n]);
    } catch (err) {
      for (const [k, v] of taken) this.pending.set(k, (this.pending.get(k) ?? 0) + v);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.periodic.close();
    await this.flush().catch((err) => this.log.warn('storing ingest outcomes failed', { err: String(err) }));
  }
}
