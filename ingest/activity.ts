// `lastReceivedAt` of sources and apps without a Postgres write per event: the latest time per
// source is kept in memory and flushed once a second in one statement per table. Until a time is
// flushed, this process's read routes overlay it (source() / app()), so a write is visible in the
// next read answered by the same process; other processes see it after their next flush read.
import type pg from 'pg';
import type { Logger } from '../lib/log.js';

export class Activity {
  private pending = new Map<string, { appId: string; at: number }>();
  /** The batch being written, then (once written) the last batch flushed: a read that fetched its
   * row just before the flush committed and consults the overlay just after must still see it. */
  private writing = new Map<string, { appId: string; at: number }>();
  private flushed = new Map<string, { appId: string; at: number }>();
  private pendingApps = new Map<string, number>();
  private writingApps = new Map<string, number>();
  private flushedApps = new Map<string, number>();
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
    const a = this.pendingApps.get(appId);
    if (a === undefined || at > a) this.pendingApps.set(appId, at);
  }

  /** The latest receive time of a source (ms) this process recorded and a read may not see in Postgres yet. */
  source(id: string): number | undefined {
    return latest(latest(this.pending.get(id)?.at, this.writing.get(id)?.at), this.flushed.get(id)?.at);
  }

  /** The same for an app. */
  app(id: string): number | undefined {
    return latest(latest(this.pendingApps.get(id), this.writingApps.get(id)), this.flushedApps.get(id));
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write() {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.writing = batch;
    this.writingApps = this.pendingApps;
    this.pendingApps = new Map();
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
      this.flushed = batch;
      this.flushedApps = this.writingApps;
    } catch (err) {
      this.log.warn('lastReceivedAt flush failed; will retry', { err: err as Error });
      for (const [id, v] of batch) this.touch(id, v.appId, v.at);
    } finally {
      this.writing = new Map();
      this.writingApps = new Map();
    }
  }

  async close() { clearInterval(this.timer); await this.flush(); }
}

const latest = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));
