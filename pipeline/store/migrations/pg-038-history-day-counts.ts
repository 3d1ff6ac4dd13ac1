import type { Migration } from './types.js';

// Event predicates counted from per-day totals instead of history rows. A count read the newest
// rows of a (profile, name) up to the largest `atLeast` asked of it, about 1 us a row on embedded
// Postgres: at ~80 events a profile, two thirds of a decision's read, and a segment asking
// `atLeast: 100000` would have read a heavy user's 100,000 rows at each of their events.
// event_counts holds how many history rows each (profile, name) has on each UTC day; a window's
// count is the days after the one it starts in, plus the rows of that one day from the window's
// start (pipeline/segments/history.ts). Kept by statement triggers on event_history, so every
// writer (ingestion, membership transitions, merges moving rows, erasure, retention, history fills)
// keeps both in step in its own transaction: one upsert per (profile, name, day) a statement
// touches, in key order (removals lock theirs in that order first), so concurrent writers lock in
// one order. Rows that reach 0 are deleted. The triggers are created before the backfill: CREATE
// TRIGGER locks event_history against writes until this migration commits, so no row is counted
// twice or missed.
const day = (k: number) => `(t.c${k} AT TIME ZONE 'UTC')::date`;
// A window's count: the days after its first, and that first day's rows from its start, read only
// when the profile has a total on that day (most windows start on a day it was not active).
const slot = (k: number) => `COALESCE(s.d[${k}], 0) + CASE WHEN NOT COALESCE(s.e[${k}], false) THEN 0 ELSE
                      (SELECT count(*) FROM event_history h WHERE h.profile_id = t.p AND h.name = t.n
                         AND h.ts >= t.c${k} AND h.ts < (${day(k)} + 1)::timestamp AT TIME ZONE 'UTC')::int END`;
const COUNT = `SELECT profile_id, name, (ts AT TIME ZONE 'UTC')::date AS day, count(*)::int AS n`;

export const pg038: Migration = {
  version: 38,
  name: 'event history counted per day',
  statements: [
    `CREATE TABLE event_counts (
      profile_id text NOT NULL,
      name text NOT NULL,
      day date NOT NULL,
      n int NOT NULL,
      PRIMARY KEY (profile_id, name, day))`,
    `CREATE FUNCTION headwater_history_counts() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       IF TG_OP <> 'INSERT' THEN
         PERFORM 1 FROM event_counts c JOIN (SELECT DISTINCT profile_id, name, (ts AT TIME ZONE 'UTC')::date AS day FROM removed) d
           ON c.profile_id = d.profile_id AND c.name = d.name AND c.day = d.day
           ORDER BY c.profile_id, c.name, c.day FOR UPDATE OF c;
         UPDATE event_counts c SET n = c.n - d.n
           FROM (${COUNT} FROM removed GROUP BY 1, 2, 3) d
           WHERE c.profile_id = d.profile_id AND c.name = d.name AND c.day = d.day;
         DELETE FROM event_counts c USING (SELECT DISTINCT profile_id, name, (ts AT TIME ZONE 'UTC')::date AS day FROM removed) d
           WHERE c.profile_id = d.profile_id AND c.name = d.name AND c.day = d.day AND c.n <= 0;
       END IF;
       IF TG_OP <> 'DELETE' THEN
         INSERT INTO event_counts AS c (profile_id, name, day, n)
           ${COUNT} FROM added GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
           ON CONFLICT (profile_id, name, day) DO UPDATE SET n = c.n + EXCLUDED.n;
       END IF;
       RETURN NULL;
     END $fn$`,
    `CREATE TRIGGER event_history_added AFTER INSERT ON event_history
       REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION headwater_history_counts()`,
    `CREATE TRIGGER event_history_removed AFTER DELETE ON event_history
       REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION headwater_history_counts()`,
    `CREATE TRIGGER event_history_moved AFTER UPDATE ON event_history
       REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION headwater_history_counts()`,
    `INSERT INTO event_counts (profile_id, name, day, n) ${COUNT} FROM event_history GROUP BY 1, 2, 3`,
    // The counts of groups of up to four windows of a (profile, name) (t.c1..c4: the windows' starts;
    // null: unused, 0; -infinity: all history), one int[4] per group in order: the UTC days after the
    // one a window starts in, summed in one read of the (profile, name)'s days, plus that day's rows
    // from the window's start (one short index range, when that day has a total).
    `CREATE FUNCTION headwater_window_counts(ps text[], ns text[], c1 timestamptz[], c2 timestamptz[], c3 timestamptz[], c4 timestamptz[])
       RETURNS SETOF int[] LANGUAGE plpgsql STABLE AS $fn$
     BEGIN
       RETURN QUERY
       SELECT ARRAY[${[1, 2, 3, 4].map(slot).join(',\n                    ')}]::int[]
       FROM unnest(ps, ns, c1, c2, c3, c4) WITH ORDINALITY AS t(p, n, c1, c2, c3, c4, i)
       CROSS JOIN LATERAL (SELECT ARRAY[${[1, 2, 3, 4].map((k) => `sum(d.n) FILTER (WHERE d.day > ${day(k)})`).join(', ')}] AS d,
                                  ARRAY[${[1, 2, 3, 4].map((k) => `bool_or(d.day = ${day(k)})`).join(', ')}] AS e
                           FROM event_counts d WHERE d.profile_id = t.p AND d.name = t.n) s
       ORDER BY t.i;
     END $fn$`,
  ],
};
