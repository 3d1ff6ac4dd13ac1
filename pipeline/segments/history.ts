// Per-profile event history in Postgres (event_history): what event predicates count. Written in the
// transaction that stores the event, so a decision never misses an event it should count.
import type { Queryable } from '../governance/types.js';

const DAY_MS = 86_400_000;

/** The start of a `withinDays` window ending at `nowMs` (ISO 8601). */
export const windowStart = (nowMs: number, withinDays: number) => new Date(nowMs - withinDays * DAY_MS).toISOString();

export interface CountSpec { profileId: string; name: string; withinDays?: number; limit: number }

/**
 * Events of each spec's name for its profile (within `withinDays` of `nowMs`, by timestamp), counted
 * up to `limit`: each count reads at most `limit` index entries, however long the history.
 */
/** The SQL of the counts: `$1`..`$4` shifted by `at` (parameters from `countParams`). */
export function countsSql(at = 0): string {
  const p = (i: number) => `$${i + at}`;
  return `SELECT (SELECT count(*)::int FROM (SELECT 1 FROM event_history h
              WHERE h.profile_id = t.p AND h.name = t.n AND h.ts >= t.c LIMIT t.l) x) AS n
     FROM unnest(${p(1)}::text[], ${p(2)}::text[], ${p(3)}::timestamptz[], ${p(4)}::int[]) WITH ORDINALITY AS t(p, n, c, l, i)
     ORDER BY t.i`;
}

export function countParams(specs: CountSpec[], nowMs: number): unknown[] {
  return [specs.map((s) => s.profileId), specs.map((s) => s.name),
    specs.map((s) => (s.withinDays === undefined ? '-infinity' : windowStart(nowMs, s.withinDays))),
    specs.map((s) => s.limit)];
}

export async function countEvents(c: Queryable, specs: CountSpec[], nowMs: number): Promise<number[]> {
  if (specs.length === 0) return [];
  const r = await c.query<{ n: number }>(countsSql(), countParams(specs, nowMs));
  return r.rows.map((row) => row.n);
}
