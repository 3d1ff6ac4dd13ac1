// Per-profile event history in Postgres (event_history): what event predicates count. Written in the
// transaction that stores the event, so a decision never misses an event it should count, for the
// names some segment of the org names (and the system events); a name a segment names for the first
// time is filled from the stored answers under the org's exclusive segment lock (fillHistory).
import type { Queryable } from '../governance/types.js';
import { retentionOf } from '../privacy/mod.js';
import { segmentOf } from './cache.js';
import { compile } from './predicates.js';

const DAY_MS = 86_400_000;

/** The system events of membership transitions (membership.ts). */
export const ENTERED = 'system.segment_entered';
export const EXITED = 'system.segment_exited';

/** The start of a `withinDays` window ending at `nowMs` (ISO 8601). */
export const windowStart = (nowMs: number, withinDays: number) => new Date(nowMs - withinDays * DAY_MS).toISOString();

export interface CountSpec { profileId: string; name: string; withinDays?: number; limit: number }

/** Windows counted in one read of a (profile, name) (headwater_window_counts takes four); a group with more takes another. */
const SLOTS = 4;

/**
 * The counts of every spec's window, exact, from the per-day totals (event_counts, kept with
 * event_history by its triggers): headwater_window_counts (migration 38) sums the UTC days after the
 * one a window starts in and adds that day's history rows from the window's start. The cost follows
 * the days a profile was active, not its events or the largest `atLeast` (a count by rows read up to
 * that many, ~1 us a row embedded). A function, so its plan is made once a session (the statement
 * written out here took longer to plan than to run). `$1`..`$6` shifted by `at` (parameters from
 * `countParams`); yields one int[SLOTS] per group, in order.
 */
export function countsSql(at = 0): string {
  const p = (i: number) => `$${i + at}`;
  return `SELECT c FROM headwater_window_counts(${p(1)}::text[], ${p(2)}::text[], ${p(3)}::timestamptz[], ${p(4)}::timestamptz[], ${p(5)}::timestamptz[], ${p(6)}::timestamptz[]) AS c`;
}

export interface CountQuery {
  /** Parameters of `countsSql`. */
  args: unknown[];
  /** The count of each spec, in spec order, from the query's rows. */
  read(rows: number[][]): number[];
}

export function countParams(specs: CountSpec[], nowMs: number): CountQuery {
  const ps: string[] = [], ns: string[] = [];
  const cs: Array<Array<string | null>> = Array.from({ length: SLOTS }, () => []);
  const at: Array<[group: number, slot: number]> = [];
  // The open group of each (profile, name) and its windows by start.
  const open = new Map<string, { g: number; slots: Map<string, number> }>();
  for (const s of specs) {
    const cut = s.withinDays === undefined ? '-infinity' : windowStart(nowMs, s.withinDays);
    const key = `${s.profileId}\u0000${s.name}`;
    let grp = open.get(key);
    let slot = grp?.slots.get(cut);
    if (grp === undefined || (slot === undefined && grp.slots.size >= SLOTS)) {
      grp = { g: ps.length, slots: new Map() };
      open.set(key, grp);
      ps.push(s.profileId); ns.push(s.name);
      for (const c of cs) c.push(null);
    }
    if (slot === undefined) {
      slot = grp.slots.size;
      grp.slots.set(cut, slot);
      cs[slot]![grp.g] = cut;
    }
    at.push([grp.g, slot]);
  }
  return {
    args: [ps, ns, ...cs],
    read: (rows) => at.map(([g, k], i) => Math.min(rows[g]![k]!, specs[i]!.limit)),
  };
}

export async function countEvents(c: RowSource, specs: CountSpec[], nowMs: number): Promise<number[]> {
  if (specs.length === 0) return [];
  const q = countParams(specs, nowMs);
  const r = await c.query(`SELECT ARRAY(${countsSql()}) AS n`, q.args);
  return q.read(r.rows[0]!.n as number[][]);
}

/**
 * Names whose history is always written, whether a segment names them or not: the system events of
 * membership transitions (membership.ts writes them as they happen; no stored answer holds them, so
 * they could not be filled later).
 */
const ALWAYS_KEPT: ReadonlySet<string> = new Set([ENTERED, EXITED]);

/**
 * Whether an event of `name` gets a history row: some segment of its org names it (the org's
 * definitions as cached at the version the writing transaction checks), or it is a system event.
 * History of other names would never be read; it is filled when a segment first names them.
 */
export function keepsHistory(segments: { byEvent: ReadonlyMap<string, unknown> } | undefined, name: string): boolean {
  return ALWAYS_KEPT.has(name) || (segments?.byEvent.has(name) ?? false);
}

/** What fillHistory needs of a client: rows (a pg client, or any store that answers rows). */
export interface RowSource { query(sql: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> }

/**
 * The event names the org's segments name now (as this transaction sees them), read as the
 * ingestion workers' cache reads them (`compile`'s `eventNames`), so both agree on what is named.
 */
export async function watchedNames(c: Queryable, orgId: string): Promise<Set<string>> {
  const r = await c.query('SELECT * FROM segments WHERE org_id = $1', [orgId]);
  const names = new Set<string>();
  for (const row of r.rows) for (const n of compile(segmentOf(row)).eventNames) names.add(n);
  return names;
}

/**
 * Rebuilds the org's history of `names` from the stored answers of its track calls (every stored
 * event has one until its profile is erased), each row on the profile it was merged into, if any,
 * and none older than the org's event retention. Rows left from an earlier time a segment named the
 * name are deleted first. Exact only while no event of these names is written meanwhile: the caller
 * holds the org's segment lock, exclusively (a segment change) or shared while no segment names them
 * (a preview, rolled back). Returns the rows written.
 *
 * Each event's profile is found through its primary key whatever the statistics say (the lateral
 * subquery, kept apart by OFFSET 0): on an org whose tables grew faster than autovacuum analyzed
 * them, the planner estimated one stored event and joined every event to a scan of all profiles,
 * 13.4 s for 117k events and ~1,000 profiles on PostgreSQL 15 (58M rows compared), against ~1 s.
 */
export async function fillHistory(c: RowSource, orgId: string, names: Iterable<string>, nowMs = Date.now()): Promise<number> {
  const fill = [...names].filter((n) => !ALWAYS_KEPT.has(n));
  if (fill.length === 0) return 0;
  const org = await c.query('SELECT settings FROM orgs WHERE id = $1', [orgId]);
  const days = retentionOf(org.rows[0]?.settings as Parameters<typeof retentionOf>[0]).events;
  const cutoff = days === null ? null : new Date(nowMs - days * DAY_MS).toISOString();
  await c.query(
    `DELETE FROM event_history h USING profiles p WHERE p.id = h.profile_id AND p.org_id = $1 AND h.name = ANY($2)`, [orgId, fill]);
  const r = await c.query(
    `WITH ins AS (
       INSERT INTO event_history (profile_id, name, ts)
       SELECT q.id, s.e->>'event', (s.e->>'timestamp')::timestamptz
       FROM (SELECT m.result->'event' AS e FROM messages m WHERE m.org_id = $1 AND m.kind = 'track') s
       CROSS JOIN LATERAL (SELECT COALESCE(p.merged_into, p.id) AS id FROM profiles p WHERE p.id = s.e->>'profileId' OFFSET 0) q
       WHERE s.e->>'event' = ANY($2) AND ($3::timestamptz IS NULL OR (s.e->>'timestamp')::timestamptz >= $3)
       RETURNING 1)
     SELECT count(*)::int AS n FROM ins`,
    [orgId, fill, cutoff]);
  return r.rows[0]!.n as number;
}
