// A journey's numbers over time for GET /v1/journeys/{key}/metrics (docs/dashboard.md). Every count
// is grouped in Postgres: a row per bucket and status, or per distinct wait, comes back, never a row
// per execution.
import type pg from 'pg';

export type MetricsBucket = 'hour' | 'day';

export interface SeriesPoint { at: string; entered: number; completed: number; failed: number; converted: number }

/**
 * The numbers of the journey controls (goals, holdouts, splits, throttle, frequency cap). Those
 * controls do not exist in this build, so no execution can be converted, held out, exited, throttled
 * or capped: zeros, no rates and no variants. This is the one place to compute them once the
 * execution columns that record them (converted, holdout, exitReason, variants) exist.
 */
export function controlsMetrics() {
  return {
    totals: { exited: 0, converted: 0, holdout: 0, holdoutConverted: 0, throttled: 0, capped: 0 },
    conversionRate: null as number | null,
    holdoutConversionRate: null as number | null,
    lift: null as number | null,
    byVariant: {} as Record<string, Record<string, { entered: number; converted: number; conversionRate: number | null }>>,
    /** Converted executions per bucket start (epoch ms). */
    convertedAt: new Map<number, number>(),
  };
}

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
 * `completed`, `failed` and `cancelled` by `ended_at`. `running` and `waiting` are the executions in
 * that state now, whenever they started; `waitingBySteps` splits `waiting` by where they wait.
 * Three grouped statements, each a range of one index: executions_journey_started,
 * executions_journey_ended (with the status, so a vacuumed table answers from the index alone) and
 * the partial index of active executions.
 */
export async function journeyMetrics(pool: pg.Pool, orgId: string, key: string, since: number, until: number, bucket: MetricsBucket) {
  const args = [orgId, key, new Date(since), new Date(until), bucket === 'day' ? '1 day' : '1 hour'];
  const [entered, ended, active] = await Promise.all([
    pool.query<{ b: Date; n: string }>(
      `SELECT date_bin($5::interval, started_at, ${EPOCH}) AS b, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND started_at >= $3 AND started_at < $4 GROUP BY 1`, args),
    pool.query<{ b: Date; status: string; n: string }>(
      `SELECT date_bin($5::interval, ended_at, ${EPOCH}) AS b, status, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND ended_at >= $3 AND ended_at < $4 GROUP BY 1, 2`, args),
    pool.query<{ status: string; position: unknown; call: { name?: string; args?: Record<string, unknown> } | null; step: string | null; n: string }>(
      `SELECT status, wait->'position' AS position, wait->'call' AS call, step, count(*) AS n
       FROM executions WHERE org_id = $1 AND journey_key = $2 AND status IN ('running', 'waiting') GROUP BY 1, 2, 3, 4`, [orgId, key]),
  ]);
  return { entered: entered.rows, ended: ended.rows, active: active.rows };
}

export type JourneyMetricsRows = Awaited<ReturnType<typeof journeyMetrics>>;

/** The answer of the route: the grouped rows laid out per bucket (`starts`, epoch ms) and merged with the controls' numbers. */
export function metricsOut(rows: JourneyMetricsRows, starts: number[]) {
  const c = controlsMetrics();
  const points = new Map<number, SeriesPoint>(starts.map((t) => [t, { at: new Date(t).toISOString(), entered: 0, completed: 0, failed: 0, converted: c.convertedAt.get(t) ?? 0 }]));
  let entered = 0, completed = 0, failed = 0, cancelled = 0, running = 0, waiting = 0;
  for (const r of rows.entered) {
    entered += Number(r.n);
    const p = points.get(new Date(r.b).getTime());
    if (p) p.entered = Number(r.n);
  }
  for (const r of rows.ended) {
    const n = Number(r.n);
    const p = points.get(new Date(r.b).getTime());
    if (r.status === 'completed') { completed += n; if (p) p.completed = n; }
    else if (r.status === 'failed') { failed += n; if (p) p.failed = n; }
    else if (r.status === 'cancelled') cancelled += n;
  }
  const waitingBySteps: Record<string, number> = {};
  for (const r of rows.active) {
    if (r.status === 'running') running += Number(r.n);
    else {
      const label = waitLabel(r.position, r.call, r.step);
      waiting += Number(r.n);
      waitingBySteps[label] = (waitingBySteps[label] ?? 0) + Number(r.n);
    }
  }
  return {
    totals: { entered, running, waiting, completed, failed, cancelled, ...c.totals },
    conversionRate: c.conversionRate, holdoutConversionRate: c.holdoutConversionRate, lift: c.lift, byVariant: c.byVariant,
    waitingBySteps, series: [...points.values()],
  };
}
