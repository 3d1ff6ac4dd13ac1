// The dashboard's overview numbers (docs/dashboard.md): track calls per minute or hour by outcome,
// and the org's counts with the failure rates of its e-mails and webhook deliveries. Grouped in
// the stores; JavaScript only fills the empty buckets.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';

export type EventBucket = 'minute' | 'hour';
export const BUCKET_MS: Record<EventBucket | 'day', number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export interface EventPoint { at: string; accepted: number; quarantined: number; denied: number; rejected: number }

/** Bucket starts from the one holding `since` up to `until` (exclusive), aligned to UTC. */
export function bucketStarts(since: number, until: number, ms: number): number[] {
  const out: number[] = [];
  for (let t = Math.floor(since / ms) * ms; t < until; t += ms) out.push(t);
  return out;
}

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/**
 * Accepted events come from ClickHouse (by `received_at`, distinct ids: a redelivered copy not yet
 * collapsed counts once; `system.segment_entered` / `exited`, written by segment transitions, are no track calls and are
 * left out); quarantined, denied and rejected track calls from `ingest_outcomes`.
 */
export async function eventStats(pool: pg.Pool, ch: ClickHouseClient, orgId: string, since: number, until: number, bucket: EventBucket): Promise<EventPoint[]> {
  const ms = BUCKET_MS[bucket];
  const starts = bucketStarts(since, until, ms);
  const from = starts[0] ?? since;
  const [accepted, held] = await Promise.all([
    ch.query({
      query: `SELECT toUnixTimestamp(toStartOfInterval(received_at, INTERVAL 1 ${bucket.toUpperCase()})) AS b, uniqExact(id) AS n
              FROM events WHERE org_id = {org:String} AND event NOT IN ('system.segment_entered', 'system.segment_exited')
                AND received_at >= toDateTime64({since:String}, 3, 'UTC') AND received_at < toDateTime64({until:String}, 3, 'UTC')
              GROUP BY b`,
      query_params: { org: orgId, since: chTime(from), until: chTime(until) }, format: 'JSONEachRow',
    }).then(async (rs) => (await rs.json()) as Array<{ b: string | number; n: string | number }>),
    pool.query<{ b: string; outcome: 'quarantined' | 'denied' | 'rejected'; n: string }>(
      `SELECT (extract(epoch FROM date_trunc($4, minute)) * 1000)::bigint AS b, outcome, sum(count) AS n
       FROM ingest_outcomes WHERE org_id = $1 AND minute >= $2 AND minute < $3 GROUP BY 1, 2`,
      [orgId, new Date(from), new Date(until), bucket]).then((r) => r.rows),
  ]);
  const points = new Map(starts.map((t) => [t, { at: new Date(t).toISOString(), accepted: 0, quarantined: 0, denied: 0, rejected: 0 }]));
  for (const r of accepted) { const p = points.get(Number(r.b) * 1000); if (p) p.accepted = Number(r.n); }
  for (const r of held) { const p = points.get(Number(r.b)); if (p) p[r.outcome] = Number(r.n); }
  return [...points.values()];
}

export interface Delivered { total: number; failed: number; failureRate: number | null }
const rate = (total: number, failed: number): Delivered => ({ total, failed, failureRate: total ? failed / total : null });

/** Counts of the org now, and the e-mails and webhook deliveries created in [since, until). */
export async function summary(pool: pg.Pool, orgId: string, since: number, until: number) {
  const r = await pool.query(
    `SELECT
       (SELECT count(*) FROM profiles WHERE org_id = $1 AND merged_into IS NULL) AS profiles,
       (SELECT count(*) FROM segments WHERE org_id = $1) AS segments,
       (SELECT count(*) FROM journeys WHERE org_id = $1) AS journeys,
       (SELECT count(*) FROM journeys WHERE org_id = $1 AND enabled) AS journeys_enabled,
       (SELECT count(*) FILTER (WHERE status = 'running') FROM executions WHERE org_id = $1 AND status IN ('running', 'waiting')) AS running,
       (SELECT count(*) FILTER (WHERE status = 'waiting') FROM executions WHERE org_id = $1 AND status IN ('running', 'waiting')) AS waiting,
       (SELECT count(*) FROM emails WHERE org_id = $1 AND created_at >= $2 AND created_at < $3) AS emails,
       (SELECT count(*) FROM emails WHERE org_id = $1 AND created_at >= $2 AND created_at < $3 AND status = 'failed') AS emails_failed,
       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND created_at >= $2 AND created_at < $3) AS deliveries,
       (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND created_at >= $2 AND created_at < $3 AND status = 'failed') AS deliveries_failed`,
    [orgId, new Date(since), new Date(until)]);
  const x = r.rows[0]!;
  const n = (k: string) => Number(x[k]);
  return {
    profiles: n('profiles'), segments: n('segments'),
    journeys: { total: n('journeys'), enabled: n('journeys_enabled') },
    executions: { running: n('running'), waiting: n('waiting') },
    emails: rate(n('emails'), n('emails_failed')),
    webhookDeliveries: rate(n('deliveries'), n('deliveries_failed')),
  };
}
