// Admission control: a token bucket per API key (429 rate_limited + Retry-After) and the org's
// monthly quota of accepted track calls (429 over_quota). Limits are re-read from Postgres at most
// once a second per org, so an operator change takes effect within a second; usage is counted in
// memory and flushed once a second (one statement), then re-read, so several front ends agree
// within about a second.
import type pg from 'pg';
import type { Logger } from '../lib/log.js';
import { QUOTA_DEFAULTS } from '../pipeline/quotas.js';

/** Generous defaults so a fresh install is not throttled; the operator tightens them per org. The
 * admission limits are this file's; the stored-data quotas are pipeline/quotas.ts's. */
export const DEFAULT_LIMITS = { ratePerSecond: 50_000, burst: 100_000, monthlyEvents: null as number | null, ...QUOTA_DEFAULTS };

interface OrgLimits {
  ratePerSecond: number; burst: number; monthlyEvents: number | null; loadedAt: number;
  /** Track calls counted in the month the limits were read in, and when that month ends (ms): the
   * end is checked on every call instead of formatting today's month. */
  used: number; monthEnds: number;
}
interface Bucket { tokens: number; at: number }

const REFRESH_MS = 1000;
const month = (ms = Date.now()) => new Date(ms).toISOString().slice(0, 7);
/** The first millisecond of the month after `m` ('YYYY-MM', UTC). */
const monthEnd = (m: string) => Date.UTC(Number(m.slice(0, 4)), Number(m.slice(5, 7)), 1);

export type Admission =
  | { ok: true; quotaLeft: number }
  | { ok: false; code: 'rate_limited'; retryAfter: number };

export class Limits {
  private orgs = new Map<string, OrgLimits>();
  private loading = new Map<string, Promise<OrgLimits>>();
  private buckets = new Map<string, Bucket>();
  private unflushed = new Map<string, number>();
  /** Counts being written by the flush in progress: still counted until the stored usage has them. */
  private flushing = new Map<string, number>();
  /** Loads and flushes run one at a time, so a load never reads usage a flush is still writing. */
  private chain: Promise<unknown> = Promise.resolve();
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => {});
    return p;
  }
  private timer: NodeJS.Timeout;

  constructor(private readonly pool: pg.Pool, private readonly log: Logger) {
    this.timer = setInterval(() => { void this.flush(); }, REFRESH_MS);
    this.timer.unref();
  }

  private load(orgId: string): Promise<OrgLimits> {
    let p = this.loading.get(orgId);
    if (p) return p;
    const m = month();
    p = this.serial(() => this.pool.query(
      `SELECT o.limits, COALESCE(u.events, 0) AS used FROM orgs o
       LEFT JOIN org_usage u ON u.org_id = o.id AND u.month = $2 WHERE o.id = $1`, [orgId, m],
    )).then((r) => {
      const row = r.rows[0] ?? { limits: {}, used: 0 };
      const l = { ...DEFAULT_LIMITS, ...row.limits };
      const v: OrgLimits = { ratePerSecond: l.ratePerSecond, burst: l.burst, monthlyEvents: l.monthlyEvents, loadedAt: Date.now(), used: Number(row.used), monthEnds: monthEnd(m) };
      this.orgs.set(orgId, v);
      return v;
    }).finally(() => this.loading.delete(orgId));
    this.loading.set(orgId, p);
    return p;
  }

  private limitsOf(orgId: string): OrgLimits | Promise<OrgLimits> {
    const l = this.orgs.get(orgId);
    const now = Date.now();
    if (l && now - l.loadedAt < REFRESH_MS && now < l.monthEnds) return l;
    return this.load(orgId);
  }

  /** Takes `calls` tokens from the key's bucket; says how many track calls the quota still admits. */
  async admit(keyId: string, orgId: string, calls: number): Promise<Admission> {
    const l0 = this.limitsOf(orgId);
    const l = l0 instanceof Promise ? await l0 : l0;
    const now = Date.now();
    let b = this.buckets.get(keyId);
    if (!b) { b = { tokens: l.burst, at: now }; this.buckets.set(keyId, b); }
    b.tokens = Math.min(l.burst, b.tokens + ((now - b.at) / 1000) * l.ratePerSecond);
    b.at = now;
    if (b.tokens < calls) {
      const retryAfter = Math.max(1, Math.ceil((calls - b.tokens) / l.ratePerSecond));
      return { ok: false, code: 'rate_limited', retryAfter };
    }
    b.tokens -= calls;
    const used = l.used + (this.unflushed.get(orgId) ?? 0) + (this.flushing.get(orgId) ?? 0);
    return { ok: true, quotaLeft: l.monthlyEvents === null ? Infinity : Math.max(0, l.monthlyEvents - used) };
  }

  /** Counts accepted track calls. */
  count(orgId: string, n: number) {
    this.unflushed.set(orgId, (this.unflushed.get(orgId) ?? 0) + n);
  }

  flush(): Promise<void> {
    return this.serial(async () => {
      if (this.unflushed.size === 0) return;
      const batch = this.unflushed;
      this.unflushed = new Map();
      this.flushing = batch;
      const ids = [...batch.keys()];
      const counts = ids.map((id) => batch.get(id)!);
      try {
        await this.pool.query(
          `INSERT INTO org_usage (org_id, month, events) SELECT id, $3, n FROM unnest($1::text[], $2::bigint[]) AS t(id, n)
           ON CONFLICT (org_id, month) DO UPDATE SET events = org_usage.events + EXCLUDED.events`, [ids, counts, month()]);
        // Local view until the next reload (which, after this, reads them stored).
        for (const [id, n] of batch) { const l = this.orgs.get(id); if (l) l.used += n; }
      } catch (err) {
        this.log.warn('usage flush failed; will retry', { err: err as Error });
        for (const [id, n] of batch) this.count(id, n);
      } finally {
        this.flushing = new Map();
      }
    });
  }

  async close() { clearInterval(this.timer); await this.flush(); }
}
