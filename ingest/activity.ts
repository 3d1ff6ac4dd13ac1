// `lastReceivedAt` of sources and apps without a Postgres write per event: the latest time per
// source is kept in memory and flushed once a second in one statement per table.
import type pg from 'pg';
import type { Logger } from '../lib/log.js';

export class Activity {
  private pending = new Map<string, { appId: string; at: number }>();
  private timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly pool: pg.Pool, private readonly log: Logger, intervalMs = 1000) {
    this.timer = setInterval(() => { void this.flush(); }, intervalMs);
    this.timer.unref();
  }

  touch(sourceId: string, appId: string, at: number) {
    const p = this.pending.get(sourceId);
    if (!p) this.pending.set(sourceId, { appId, at });
    else if (at > p.at) p.at = at;
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write() {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const ids = [...batch.keys()];
    const apps = ids.map((id) => batch.get(id)!.appId);
    const times = ids.map((id) => new Date(batch.get(id)!.at).toISOString());
    try {
      await this.pool.query(
        `UPDATE sources s SET last_received_at = GREATEST(COALESCE(s.last_received_at, t.at), t.at)
         FROM unnest($1::text[], $2::timestamptz[]) AS t(id, at) WHERE s.id = t.id`, [ids, times]);
      await this.pool.query(
        `UPDATE apps a SET last_received_at = GREATEST(COALESCE(a.last_received_at, t.at), t.at)
         FROM (SELECT id, max(at) AS at FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at) GROUP BY id) t WHERE a.id = t.id`,
        [apps, times]);
    } catch (err) {
      this.log.warn('lastReceivedAt flush failed; will retry', { err: err as Error });
      for (const [id, v] of batch) this.touch(id, v.appId, v.at);
    }
  }

  async close() { clearInterval(this.timer); await this.flush(); }
}
