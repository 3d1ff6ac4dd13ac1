// Starting executions, for the triggers of a landed batch and for debounced starts that fell due.
// Consent, cooldown and one active execution per (journey, profile) are decided in the inserting
// statement; the (journey, trigger event) key makes a repeat a no-op; a start past the org's
// runningExecutions quota is recorded as failed (./quota.ts). The controls (docs/authoring.md,
// "Controls"): a held-out profile's execution is inserted completed with `holdout`; a throttled
// journey keeps at most `limit` starts per window under one row lock shared by every process, and
// the triggers over it are deleted again in the same transaction and counted; a debounced
// journey's trigger only moves the profile's pending start (journey_debounce), which the runner
// starts once it is due.
import type pg from 'pg';
import { inHoldout } from '../../lib/assign.js';
import type { Logger } from '../../lib/log.js';
import { newId } from '../../pipeline/ids.js';
import { tx } from '../../pipeline/store/postgres.js';
import type { EventRecord } from '../../pipeline/types.js';
import { lockExecutionQuotas, refuseOverQuota } from './quota.js';
import type { JourneyTrigger, TriggerIndex } from './triggers.js';

export interface Start { e: EventRecord; t: JourneyTrigger }

/** Starts the executions of a landed batch's triggers; answers how many began to run. */
export async function startExecutions(pool: pg.Pool, log: Logger, index: TriggerIndex, events: readonly EventRecord[]): Promise<number> {
  const now: Start[] = [];
  const later: Start[] = [];
  for (const e of events) for (const t of index.match(e)) (t.debounceMs > 0 ? later : now).push({ e, t });
  if (later.length) await debounce(pool, later);
  if (now.length === 0) return 0;
  return tx(pool, (c) => insertStarts(c, log, now));
}

/** The pending start of each (journey, profile) moves to the latest trigger, due `debounce` after it. */
async function debounce(pool: pg.Pool, starts: Start[]): Promise<void> {
  const latest = new Map<string, Start>();
  for (const s of starts) {
    const k = `${s.e.orgId}\u0000${s.t.key}\u0000${s.e.profileId}`;
    const cur = latest.get(k);
    if (!cur || Date.parse(s.e.receivedAt) >= Date.parse(cur.e.receivedAt)) latest.set(k, s);
  }
  const l = [...latest.values()].sort((a, b) => (a.e.orgId + a.t.key + a.e.profileId < b.e.orgId + b.t.key + b.e.profileId ? -1 : 1));
  await pool.query(
    `INSERT INTO journey_debounce (org_id, journey_key, profile_id, event, due_at)
     SELECT t.org_id, t.key, t.profile_id, t.start, t.received_at + make_interval(secs => t.ms / 1000.0)
     FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[], $6::float8[]) AS t(org_id, key, profile_id, start, received_at, ms)
     ON CONFLICT (org_id, journey_key, profile_id) DO UPDATE SET event = excluded.event, due_at = excluded.due_at
       WHERE (journey_debounce.event->'e'->>'receivedAt')::timestamptz <= (excluded.event->'e'->>'receivedAt')::timestamptz`,
    [l.map((s) => s.e.orgId), l.map((s) => s.t.key), l.map((s) => s.e.profileId), l.map((s) => JSON.stringify(s)),
      l.map((s) => s.e.receivedAt), l.map((s) => s.t.debounceMs)]);
}

/**
 * Claims (deletes) up to `limit` due debounced starts, whoever queued them, and starts them in the
 * same transaction; answers how many were due (the caller looks again when it took `limit`).
 */
export async function startDebounced(pool: pg.Pool, log: Logger, limit = 200): Promise<number> {
  return tx(pool, async (c) => {
    const r = await c.query<{ event: Start }>(
      `DELETE FROM journey_debounce d USING (SELECT org_id, journey_key, profile_id FROM journey_debounce WHERE due_at <= now()
         ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) p
       WHERE d.org_id = p.org_id AND d.journey_key = p.journey_key AND d.profile_id = p.profile_id RETURNING d.event`, [limit]);
    if (r.rows.length) await insertStarts(c, log, r.rows.map((x) => x.event));
    return r.rows.length;
  });
}

/** Milliseconds until the earliest debounced start is due (<= 0: due now), or null when none is pending. */
export async function nextDebounceMs(pool: pg.Pool): Promise<number | null> {
  const r = await pool.query<{ ms: number | null }>(
    `SELECT (EXTRACT(EPOCH FROM ((SELECT min(due_at) FROM journey_debounce) - now())) * 1000)::float8 AS ms`);
  return r.rows[0]?.ms ?? null;
}

/** Inserts the starts (in order) on `c`, inside the caller's transaction; answers how many run. */
export async function insertStarts(c: pg.PoolClient, log: Logger, starts: Start[]): Promise<number> {
  const cols: unknown[][] = Array.from({ length: 15 }, () => []);
  for (const { e, t } of starts) {
    const held = inHoldout(t.key, e.profileId, t.holdout);
    const row = [newId('exe'), e.orgId, t.key, t.versionId, t.releaseId, e.appId, e.sourceId, e.profileId, e.environment, e.id,
      JSON.stringify(e), t.purpose, t.cooldownMs, e.receivedAt, held];
    row.forEach((v, i) => cols[i]!.push(v));
  }
  // Rows go in event order: of two triggers of one (journey, profile) in a batch the first starts
  // and the second meets the one-active index. A repeat meets the (journey, trigger event) key.
  // Consent is a probe of each row's profile by primary key: as a join, the planner (which guesses
  // the consent test keeps 0.5 % of profiles) hashed every profile of the store, 53 us per start
  // with 40,000 profiles on embedded Postgres; probed, 3.6 us.
  const limits = await lockExecutionQuotas(c, cols[1] as string[]);
  const r = await c.query<{ id: string; org_id: string; journey_key: string; holdout: boolean }>(
    `INSERT INTO executions (id, org_id, journey_key, version_id, release_id, app_id, source_id, profile_id, environment,
       trigger_event_id, run_id, event, status, wake_at, started_at, updated_at, ended_at, holdout)
     SELECT t.id, t.org_id, t.journey_key, t.version_id, t.release_id, t.app_id, t.source_id, t.profile_id, t.environment,
       t.trigger_event_id, 'run_' || substr(t.id, 5), t.event::jsonb, CASE WHEN t.held THEN 'completed' ELSE 'running' END,
       CASE WHEN t.held THEN NULL ELSE now() END, now(), now(), CASE WHEN t.held THEN now() END, t.held
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                 $10::text[], $11::text[], $12::text[], $13::float8[], $14::timestamptz[], $15::boolean[])
          WITH ORDINALITY AS t(id, org_id, journey_key, version_id, release_id, app_id, source_id, profile_id, environment,
                               trigger_event_id, event, purpose, cooldown_ms, received_at, held, ord)
     WHERE (SELECT p.consent -> t.purpose FROM profiles p WHERE p.id = t.profile_id AND p.org_id = t.org_id) = 'true'::jsonb
       AND NOT (t.cooldown_ms > 0 AND EXISTS (SELECT 1 FROM executions e WHERE e.org_id = t.org_id AND e.journey_key = t.journey_key
             AND e.profile_id = t.profile_id AND e.started_at > t.received_at - make_interval(secs => t.cooldown_ms / 1000.0)))
     ORDER BY t.ord
     ON CONFLICT DO NOTHING
     RETURNING id, org_id, journey_key, holdout`, cols);
  // Ids are time-ordered: sorted, they are in insert order.
  let rows = r.rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  rows = await throttle(c, starts, rows);
  const live = rows.filter((x) => !x.holdout);
  const refused = limits.size ? await refuseOverQuota(c, log, limits, live) : 0;
  return live.length - refused;
}

type Inserted = { id: string; org_id: string; journey_key: string; holdout: boolean };

/**
 * The starts of throttled journeys past their window's limit are deleted (they never become
 * visible) and counted in journey_counters. The window is fixed, aligned to multiples of `per`
 * on the store's clock; each journey's row is locked in (org, key) order.
 */
async function throttle(c: pg.PoolClient, starts: Start[], rows: Inserted[]): Promise<Inserted[]> {
  const limits = new Map<string, { org: string; key: string; limit: number; perMs: number }>();
  for (const { e, t } of starts) if (t.throttle) limits.set(`${e.orgId}\u0000${t.key}`, { org: e.orgId, key: t.key, ...t.throttle });
  if (limits.size === 0) return rows;
  const drop = new Set<string>();
  for (const k of [...limits.keys()].sort()) {
    const l = limits.get(k)!;
    const mine = rows.filter((x) => x.org_id === l.org && x.journey_key === l.key);
    if (mine.length === 0) continue;
    const w = await c.query<{ started: number }>(
      `WITH w AS (SELECT to_timestamp(floor(EXTRACT(EPOCH FROM now()) * 1000 / $3) * $3 / 1000.0) AS start)
       INSERT INTO journey_throttle AS j (org_id, journey_key, window_start, started) SELECT $1, $2, w.start, 0 FROM w
       ON CONFLICT (org_id, journey_key) DO UPDATE SET
         window_start = GREATEST(j.window_start, excluded.window_start),
         started = CASE WHEN excluded.window_start > j.window_start THEN 0 ELSE j.started END
       RETURNING started`, [l.org, l.key, l.perMs]);
    const room = Math.max(0, l.limit - w.rows[0]!.started);
    const over = mine.slice(room);
    await c.query(`UPDATE journey_throttle SET started = started + $3 WHERE org_id = $1 AND journey_key = $2`, [l.org, l.key, mine.length - over.length]);
    if (over.length === 0) continue;
    for (const x of over) drop.add(x.id);
    await c.query(`DELETE FROM executions WHERE id = ANY($1::text[])`, [over.map((x) => x.id)]);
    await countJourney(c, l.org, l.key, 'throttled', over.length);
  }
  return rows.filter((x) => !drop.has(x.id));
}

/** Adds to a journey's counter of the current hour (journey_counters). */
export async function countJourney(c: pg.PoolClient | pg.Pool, org: string, key: string, what: 'throttled' | 'capped', n: number): Promise<void> {
  await c.query(
    `INSERT INTO journey_counters (org_id, journey_key, hour, ${what}) VALUES ($1, $2, date_trunc('hour', now()), $3)
     ON CONFLICT (org_id, journey_key, hour) DO UPDATE SET ${what} = journey_counters.${what} + excluded.${what}`, [org, key, n]);
}
