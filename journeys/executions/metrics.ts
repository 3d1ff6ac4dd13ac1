// A journey's numbers over time for GET /v1/journeys/{key}/metrics (docs/dashboard.md, "A journey's
// metrics"). Every count is grouped in Postgres: a row per bucket and status, per distinct wait or
// per distinct choice of variants comes back, never a row per execution. The counts come from the
// stored executions and counters themselves (no counter kept beside them that could drift), read in
// one snapshot so concurrent writes never make them disagree with each other.
import type pg from 'pg';
import { tx } from '../../pipeline/store/postgres.js';

export type MetricsBucket = 'hour' | 'day';

export interface SeriesPoint { at: string; entered: number; completed: number; failed: number; converted: number }

/** Where a waiting execution is parked, in words: its journal position, wait call and argument
 * (`#1 sleep 1h`, `#2 waitForEvent Purchased`). Built once per distinct wait, not per execution. */
function waitLabel(position: unknown, call: { name?: string; args?: Record<string, unknown> } | null, step: string | null): string {
  if (!call?.name) return step ?? 'unknown';
  const arg = call.name === 'sleep' ? call.args?.duration : call.name === 'waitForEvent' ? call.args?.event : undefined;
  const said = arg === undefined ? '' : ` ${Array.isArray(arg) ? arg.join(' | ') : String(arg)}`;
  return `#${position ?? '?'} ${call.name}${said}`;
}

/** Buckets are counted from a UTC midnight: date_bin on the timestamptz itself is about twice as
 * fast on embedded PGlite as date_trunc in UTC turned into epoch numbers, row by row. */
const EPOCH = `timestamptz '2000-01-01T00:00:00Z'`;

/**
 * Flows count executions by when they happened in [since, until): `entered` by `started_at`,
 * `completed`, `failed`, `cancelled` and `exited` by `ended_at`, the series' `converted` by
 * `converted_at`. The conversion totals, rates and variants count the cohort that entered in the
 * window, whenever it converted. `running` and `waiting` are the executions in that state now,
 * whenever they started; `waitingBySteps` splits `waiting` by where they wait. Five grouped
 * statements, each a range of one index: executions_journey_started and executions_journey_ended
 * (carrying the columns counted, so a vacuumed table answers from the index alone),
 * executions_journey_converted, journey_counters' key and executions_journey_active.
 */
export async function journeyMetrics(pool: pg.Pool, orgId: string, key: string, since: number, until: number, bucket: MetricsBucket) {
  const args = [orgId, key, new Date(since), new Date(until), bucket === 'day' ? '1 day' : '1 hour'];
  return tx(pool, async (c) => {
    await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
    // The cohort: executions that started in the window, by bucket and by what the controls
    // recorded on them (few distinct values: held out or not, converted or not, the variants).
    const entered = await c.query<{ b: Date; holdout: boolean; converted: boolean; variants: Record<string, string> | null; n: string }>(
      `SELECT date_bin($5::interval, started_at, ${EPOCH}) AS b, holdout, converted, variants, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND started_at >= $3 AND started_at < $4 GROUP BY 1, 2, 3, 4`, args);
    const ended = await c.query<{ b: Date; status: string; exited: boolean; n: string }>(
      `SELECT date_bin($5::interval, ended_at, ${EPOCH}) AS b, status, exit_reason IS NOT NULL AS exited, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND ended_at >= $3 AND ended_at < $4 GROUP BY 1, 2, 3`, args);
    const conversions = await c.query<{ b: Date; n: string }>(
      `SELECT date_bin($5::interval, converted_at, ${EPOCH}) AS b, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND converted_at >= $3 AND converted_at < $4 GROUP BY 1`, args);
    // Counted per hour where they happen: the hours that overlap the window.
    const counters = await c.query<{ throttled: string; capped: string }>(
      `SELECT coalesce(sum(throttled), 0) AS throttled, coalesce(sum(capped), 0) AS capped FROM journey_counters
       WHERE org_id = $1 AND journey_key = $2 AND hour > $3::timestamptz - interval '1 hour' AND hour < $4`, args.slice(0, 4));
    const active = await c.query<{ status: string; position: unknown; call: { name?: string; args?: Record<string, unknown> } | null; step: string | null; n: string }>(
      `SELECT status, wait->'position' AS position, wait->'call' AS call, step, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND status IN ('running', 'waiting') GROUP BY 1, 2, 3, 4`, [orgId, key]);
    return { entered: entered.rows, ended: ended.rows, conversions: conversions.rows, counters: counters.rows[0]!, active: active.rows };
  });
}

export type JourneyMetricsRows = Awaited<ReturnType<typeof journeyMetrics>>;

/** converted / entered, or null when nothing entered. */
const rate = (converted: number, entered: number) => (entered > 0 ? converted / entered : null);

/** The answer of the route: the grouped rows laid out per bucket (`starts`, epoch ms). */
export function metricsOut(rows: JourneyMetricsRows, starts: number[]) {
  const points = new Map<number, SeriesPoint>(starts.map((t) => [t, { at: new Date(t).toISOString(), entered: 0, completed: 0, failed: 0, converted: 0 }]));
  const at = (b: Date) => points.get(new Date(b).getTime());
  let entered = 0, completed = 0, failed = 0, cancelled = 0, running = 0, waiting = 0, exited = 0;
  let converted = 0, holdout = 0, holdoutConverted = 0;
  const byVariant: Record<string, Record<string, { entered: number; converted: number; conversionRate: number | null }>> = {};
  for (const r of rows.entered) {
    const n = Number(r.n);
    entered += n;
    const p = at(r.b);
    if (p) p.entered += n;
    if (r.holdout) holdout += n;
    if (r.converted) converted += n;
    if (r.holdout && r.converted) holdoutConverted += n;
    for (const [split, variant] of Object.entries(r.variants ?? {})) {
      const v = ((byVariant[split] ??= {})[String(variant)] ??= { entered: 0, converted: 0, conversionRate: null });
      v.entered += n;
      if (r.converted) v.converted += n;
    }
  }
  for (const split of Object.values(byVariant)) for (const v of Object.values(split)) v.conversionRate = rate(v.converted, v.entered);
  for (const r of rows.ended) {
    const n = Number(r.n);
    const p = at(r.b);
    if (r.exited) exited += n;
    if (r.status === 'completed') { completed += n; if (p) p.completed += n; }
    else if (r.status === 'failed') { failed += n; if (p) p.failed += n; }
    else if (r.status === 'cancelled') cancelled += n;
  }
  for (const r of rows.conversions) { const p = at(r.b); if (p) p.converted += Number(r.n); }
  const waitingBySteps: Record<string, number> = {};
  for (const r of rows.active) {
    if (r.status === 'running') running += Number(r.n);
    else {
      const label = waitLabel(r.position, r.call, r.step);
      waiting += Number(r.n);
      waitingBySteps[label] = (waitingBySteps[label] ?? 0) + Number(r.n);
    }
  }
  const conversionRate = rate(converted - holdoutConverted, entered - holdout);
  const holdoutConversionRate = rate(holdoutConverted, holdout);
  // Relative lift over the holdout; undefined (null) without both rates or with a holdout rate of 0.
  const lift = conversionRate !== null && holdoutConversionRate ? (conversionRate - holdoutConversionRate) / holdoutConversionRate : null;
  return {
    totals: {
      entered, running, waiting, completed, failed, cancelled, exited, converted, holdout, holdoutConverted,
      throttled: Number(rows.counters.throttled), capped: Number(rows.counters.capped),
    },
    conversionRate, holdoutConversionRate, lift, byVariant, waitingBySteps, series: [...points.values()],
  };
}
