import type { Migration } from './types.js';

// The journey runner's outcome save (journeys/executions/save.ts) as a function: plpgsql keeps the
// statement's plan for the session, where sent as text it was parsed and planned again for every
// batch of outcomes. On PGlite that was ~1.3 of ~4.2 ms per save of 8 outcomes (measured on the
// executions left by the journey bench: 4.1-4.4 ms as text, 2.6-3.0 ms as this function). The
// statement is unchanged: each outcome is checked under its row lock (still this lease's, still
// running or waiting), its logs stored, and a new event wait answered at once by an event that
// reached the inbox while the activation ran.
//   r: the outcomes as saveRow (save.ts) makes them; ids: their execution ids (the planner sees how
//   few rows the update touches and takes them by primary key).
export const pg028: Migration = {
  version: 28,
  name: 'journey outcome save as a function',
  statements: [
    `CREATE FUNCTION headwater_save_outcomes(r jsonb, ids text[]) RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
  WITH o AS (SELECT * FROM jsonb_to_recordset(r) AS o(id text, lease text, seq int, kind text, journal jsonb, n int,
         step text, until timestamptz, wait jsonb, names text[], began timestamptz, secs float8, err text, run text, event jsonb, logs jsonb)),
   cur AS (SELECT x.id, x.inbox FROM (SELECT id, lease FROM o ORDER BY id) k
           CROSS JOIN LATERAL (SELECT id, inbox FROM executions WHERE id = k.id AND lease_id = k.lease
             AND status IN ('running', 'waiting') FOR UPDATE) x),
   logs AS (INSERT INTO execution_logs (execution_id, run_seq, seq, level, message)
           SELECT o.id, o.seq, l.s, l.l, l.m FROM o JOIN cur ON cur.id = o.id CROSS JOIN jsonb_to_recordset(o.logs) AS l(s int, l text, m text)
           ON CONFLICT DO NOTHING),
   v AS (SELECT o.*, CASE WHEN o.kind = 'waiting' AND o.names IS NOT NULL THEN
           (SELECT e FROM jsonb_array_elements(cur.inbox) e WHERE e->>'event' = ANY(o.names) AND (e->>'receivedAt')::timestamptz >= o.began
            ORDER BY (e->>'receivedAt')::timestamptz LIMIT 1) END AS hit
         FROM o JOIN cur ON cur.id = o.id)
  UPDATE executions x SET
    status = CASE v.kind WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'failed' WHEN 'restart' THEN 'running'
      WHEN 'retry' THEN x.status ELSE 'waiting' END,
    run_id = CASE WHEN v.kind = 'restart' THEN v.run ELSE x.run_id END,
    run_seq = CASE WHEN v.kind = 'restart' THEN x.run_seq + 1 ELSE x.run_seq END,
    event = CASE WHEN v.kind = 'restart' THEN COALESCE(v.event, x.event) ELSE x.event END,
    journal = v.journal, journal_entries = v.n, step = v.step,
    timer_deadline = CASE WHEN v.kind IN ('waiting', 'deferred') THEN v.until WHEN v.kind = 'retry' THEN x.timer_deadline END,
    wait = CASE v.kind WHEN 'waiting' THEN v.wait WHEN 'retry' THEN x.wait END,
    wake_value = CASE v.kind WHEN 'waiting' THEN v.hit WHEN 'retry' THEN x.wake_value END,
    wake_at = CASE v.kind WHEN 'waiting' THEN CASE WHEN v.hit IS NULL THEN v.until ELSE now() END WHEN 'deferred' THEN v.until
      WHEN 'restart' THEN now() + make_interval(secs => v.secs) WHEN 'retry' THEN now() + make_interval(secs => v.secs) END,
    error = CASE v.kind WHEN 'completed' THEN NULL WHEN 'failed' THEN v.err ELSE x.error END,
    attempts = CASE WHEN v.kind IN ('failed', 'retry') THEN x.attempts ELSE 0 END,
    ended_at = CASE WHEN v.kind IN ('completed', 'failed') THEN now() ELSE x.ended_at END,
    lease_until = NULL, lease_id = NULL, inbox = '[]'::jsonb, updated_at = now()
  FROM v WHERE x.id = v.id AND x.id = ANY(ids);
     END $fn$`,
  ],
};
