// The retention sweep: each org's windows (settings.retention) applied in batches. Several
// processes may run it: an org is claimed with FOR UPDATE SKIP LOCKED and a lease, so two never
// sweep the same org at once, and `retention_swept_at` spaces an org's passes. Each batch is one
// short statement (rows chosen with SKIP LOCKED), so the sweep never holds long locks; progress is
// logged per kind.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../lib/log.js';
import { startPeriodic, type Periodic } from '../periodic.js';

export const RETENTION_KINDS = ['events', 'executions', 'emails', 'webhookDeliveries', 'rejections'] as const;
export type RetentionKind = typeof RETENTION_KINDS[number];
export type Retention = Record<RetentionKind, number | null>;

export const RETENTION_DEFAULTS: Retention = { events: null, executions: 90, emails: 30, webhookDeliveries: 30, rejections: 30 };

/** The effective windows of an org's stored settings (defaults for the kinds never set). */
export function retentionOf(settings: { retention?: Record<string, unknown> } | null | undefined): Retention {
  const stored = settings?.retention ?? {};
  const out = { ...RETENTION_DEFAULTS };
  for (const k of RETENTION_KINDS) {
    if (!(k in stored)) continue;
    const v = stored[k];
    out[k] = typeof v === 'number' ? v : null;
  }
  return out;
}

export interface RetentionOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: Logger;
  /** How often an org is swept (and how often this process looks for an org due). */
  everyMs: number;
  /** Rows per delete statement. */
  batch?: number;
}

// One batch each: ids of rows older than the cutoff, locked with SKIP LOCKED (rows another
// statement holds are left for the next pass), then deleted.
const BATCHES: Record<Exclude<RetentionKind, 'events'>, string> = {
  executions: `WITH gone AS (
      DELETE FROM executions WHERE id IN (
        SELECT id FROM executions WHERE org_id = $1 AND ended_at < $2 AND status NOT IN ('running', 'waiting')
        LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING id),
    logs AS (DELETE FROM execution_logs WHERE execution_id IN (SELECT id FROM gone))
    SELECT count(*)::int AS n FROM gone`,
  emails: `WITH gone AS (DELETE FROM emails WHERE id IN (
      SELECT id FROM emails WHERE org_id = $1 AND created_at < $2 AND status <> 'pending' LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING 1)
    SELECT count(*)::int AS n FROM gone`,
  webhookDeliveries: `WITH gone AS (DELETE FROM webhook_deliveries WHERE id IN (
      SELECT id FROM webhook_deliveries WHERE org_id = $1 AND created_at < $2 AND status <> 'pending' LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING 1)
    SELECT count(*)::int AS n FROM gone`,
  rejections: `WITH gone AS (DELETE FROM segment_rejections WHERE id IN (
      SELECT id FROM segment_rejections WHERE org_id = $1 AND created_at < $2 LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING 1)
    SELECT count(*)::int AS n FROM gone`,
};

/** Applies one org's windows; answers the rows deleted per kind. */
export async function sweepOrg(o: RetentionOptions, orgId: string, retention: Retention, now = Date.now()): Promise<Partial<Record<RetentionKind, number>>> {
  const batch = o.batch ?? 1000;
  const out: Partial<Record<RetentionKind, number>> = {};
  for (const kind of RETENTION_KINDS) {
    const days = retention[kind];
    if (days === null) continue;
    const cutoff = new Date(now - days * 86_400_000);
    if (kind === 'events') {
      out.events = await sweepEvents(o, orgId, cutoff);
      continue;
    }
    let total = 0;
    for (;;) {
      const n = (await o.pool.query<{ n: number }>(BATCHES[kind], [orgId, cutoff, batch])).rows[0]?.n ?? 0;
      total += n;
      if (n > 0) o.log.info('retention sweep progress', { orgId, kind, deleted: total, olderThan: cutoff.toISOString() });
      if (n < batch) break;
    }
    out[kind] = total;
  }
  return out;
}

/** Events by `timestamp`: ClickHouse's lightweight DELETE (waited for), and the per-profile history
 * segments count from. */
async function sweepEvents(o: RetentionOptions, orgId: string, cutoff: Date): Promise<number> {
  const params = { org: orgId, cut: cutoff.toISOString().replace('T', ' ').replace('Z', '') };
  const where = `org_id = {org:String} AND timestamp < toDateTime64({cut:String}, 3, 'UTC')`;
  const rs = await o.ch.query({ query: `SELECT count() AS n FROM events WHERE ${where}`, query_params: params, format: 'JSONEachRow' });
  const n = Number(((await rs.json()) as Array<{ n: string }>)[0]?.n ?? 0);
  if (n > 0) {
    await o.ch.command({ query: `DELETE FROM events WHERE ${where}`, query_params: params, clickhouse_settings: { lightweight_deletes_sync: 2 } as any });
    o.log.info('retention sweep progress', { orgId, kind: 'events', deleted: n, olderThan: cutoff.toISOString() });
  }
  await o.pool.query(
    `DELETE FROM event_history h USING profiles p WHERE p.id = h.profile_id AND p.org_id = $1 AND h.ts < $2`, [orgId, cutoff]);
  return n;
}

/** Claims due orgs one at a time and sweeps them; several processes share the work. */
export function startRetentionSweep(o: RetentionOptions): Periodic {
  const pass = async () => {
    for (;;) {
      const r = await o.pool.query<{ id: string; settings: any }>(
        `UPDATE orgs SET retention_lease_until = now() + interval '10 minutes'
         WHERE id = (SELECT id FROM orgs
                     WHERE (retention_swept_at IS NULL OR retention_swept_at < now() - make_interval(secs => $1::float8 / 1000))
                       AND (retention_lease_until IS NULL OR retention_lease_until < now())
                     ORDER BY retention_swept_at NULLS FIRST LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id, settings`, [o.everyMs]);
      const org = r.rows[0];
      if (!org) return;
      try {
        const deleted = await sweepOrg(o, org.id, retentionOf(org.settings));
        if (Object.values(deleted).some((n) => n && n > 0)) o.log.info('retention sweep done', { orgId: org.id, deleted });
      } finally {
        await o.pool.query('UPDATE orgs SET retention_swept_at = now(), retention_lease_until = NULL WHERE id = $1', [org.id]);
      }
    }
  };
  return startPeriodic(Math.min(o.everyMs, 60_000), pass, o.log, 'retention sweep failed');
}
