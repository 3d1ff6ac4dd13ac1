// Per-profile event history in Postgres (event_history): what event predicates count. Written in the
// transaction that stores the event, so a decision never misses an event it should count.
import type pg from 'pg';
import type { Queryable } from '../governance/types.js';
import type { EventRecord } from '../types.js';

/** One statement for all of them. */
export async function recordHistory(c: pg.PoolClient, events: Array<Pick<EventRecord, 'profileId' | 'event' | 'timestamp'>>): Promise<void> {
  if (events.length === 0) return;
  await c.query(
    `INSERT INTO event_history (profile_id, name, ts) SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])`,
    [events.map((e) => e.profileId), events.map((e) => e.event), events.map((e) => e.timestamp)]);
}

const DAY_MS = 86_400_000;

export interface CountSpec { profileId: string; name: string; withinDays?: number; limit: number }

/**
 * Events of each spec's name for its profile (within `withinDays` of `nowMs`, by timestamp), counted
 * up to `limit`: each count reads at most `limit` index entries, however long the history.
 */
export async function countEvents(c: Queryable, specs: CountSpec[], nowMs: number): Promise<number[]> {
  if (specs.length === 0) return [];
  const r = await c.query<{ n: number }>(
    `SELECT (SELECT count(*)::int FROM (SELECT 1 FROM event_history h
              WHERE h.profile_id = t.p AND h.name = t.n AND h.ts >= t.c LIMIT t.l) x) AS n
     FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int[]) WITH ORDINALITY AS t(p, n, c, l, i)
     ORDER BY t.i`,
    [specs.map((s) => s.profileId), specs.map((s) => s.name),
      specs.map((s) => (s.withinDays === undefined ? '-infinity' : new Date(nowMs - s.withinDays * DAY_MS).toISOString())),
      specs.map((s) => s.limit)]);
  return r.rows.map((row) => row.n);
}
