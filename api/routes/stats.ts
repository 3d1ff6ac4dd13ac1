// The dashboard's numbers: track calls over time by outcome, the org's counts, a journey's metrics
// (docs/dashboard.md). Reads only; every query is scoped by the session's org.
import { bucketStarts, BUCKET_MS, eventStats, summary } from '../../pipeline/stats/read.js';
import { journeyMetrics, metricsOut } from '../../journeys/executions/mod.js';
import { getJourney } from '../../journeys/definitions/mod.js';
import { httpError, notFound } from '../../http/errors.js';
import type { Bind, Deps } from './deps.js';

const MAX_BUCKETS = 1500;
const DAY = 86_400_000;

/** The window of a query: defaults, since before until, and a bounded number of buckets. */
function windowOf(q: { since?: string; until?: string }, defaultSpan: number, bucketMs?: number): { since: number; until: number } {
  const until = q.until ? Date.parse(q.until) : Date.now();
  const since = q.since ? Date.parse(q.since) : until - defaultSpan;
  if (!(since < until)) throw httpError('validation_failed', 'query /since: must be before until');
  if (bucketMs && (until - Math.floor(since / bucketMs) * bucketMs) / bucketMs > MAX_BUCKETS) {
    throw httpError('validation_failed', `query /since: the window holds more than ${MAX_BUCKETS} buckets; use a wider bucket or a shorter window`);
  }
  return { since, until };
}

export function statsRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/stats/events', async (req) => {
    const q = req.query;
    const bucket = q.bucket ?? 'minute';
    const w = windowOf(q, DAY, BUCKET_MS[bucket]);
    const series = await eventStats(d.pool, d.ch, req.principal.orgId!, w.since, w.until, bucket);
    const totals = { accepted: 0, quarantined: 0, denied: 0, rejected: 0 };
    for (const p of series) { totals.accepted += p.accepted; totals.quarantined += p.quarantined; totals.denied += p.denied; totals.rejected += p.rejected; }
    return { data: { bucket, since: new Date(w.since).toISOString(), until: new Date(w.until).toISOString(), totals, series } };
  });

  bind('GET', '/v1/stats/summary', async (req) => {
    const w = windowOf(req.query, DAY);
    const s = await summary(d.pool, req.principal.orgId!, w.since, w.until);
    return { data: { since: new Date(w.since).toISOString(), until: new Date(w.until).toISOString(), ...s } };
  });

  bind('GET', '/v1/journeys/{key}/metrics', async (req) => {
    const q = req.query;
    const bucket = q.bucket ?? 'hour';
    const w = windowOf(q, bucket === 'day' ? 30 * DAY : DAY, BUCKET_MS[bucket]);
    const orgId = req.principal.orgId!;
    const key = req.params.key;
    if (!(await getJourney(d.pool, orgId, key))) throw notFound('journey');
    const rows = await journeyMetrics(d.pool, orgId, key, w.since, w.until, bucket);
    return { data: metricsOut(rows, bucketStarts(w.since, w.until, BUCKET_MS[bucket])) };
  });
}
