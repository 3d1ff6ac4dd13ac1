// Activation outcomes are stored in batches formed by lib/coalesce.ts: while one save statement runs,
// the outcomes that finish meanwhile queue and go together in the next (no timer). Each
// outcome is checked under its row lock as before (still this lease's, still running or waiting: a
// cancel or a takeover after the lease expired discards it), its logs stored (duplicates of a repeated
// activation ignored), and a new event wait answered at once by an event that reached the inbox while
// the activation ran (answerWaits in landed.ts takes the same row locks, also in id order). Each row
// is found and locked by its primary key: joined to the active executions instead, the planner of a
// store without statistics scanned all of them for every save (3 ms a statement with 3,000 due). A batch
// that fails is saved again one outcome at a time, so one outcome the store refuses fails alone.
import type pg from 'pg';
import type { Activation } from '../runtime/mod.js';
import type { WaitRecord } from './landed.js';
import { newId } from '../../pipeline/ids.js';
import { coalesce } from '../../lib/coalesce.js';

/** What the runner stores of one activation; `delayMs` for a restart, `deferUntil` for a send quiet hours put off. */
export type Outcome = Activation & { delayMs?: number; deferUntil?: number };

export interface SaveInput {
  id: string;
  leaseId: string;
  runSeq: number;
  attempts: number;
  /** When the activation began (epoch ms): an event wait counts events from then. */
  began: number;
  outcome: Outcome;
}

const RETRY_MAX_MS = 60_000;
/** Outcomes per statement: journals can be large, and one statement holds all their row locks. */
const MAX_BATCH = 64;

/** The row the statement reads for one outcome (jsonb_to_recordset). */
interface SaveRow {
  id: string; lease: string; seq: number; kind: 'completed' | 'failed' | 'waiting' | 'deferred' | 'restart' | 'retry';
  journal: unknown; n: number; step: string | null; until: string | null; wait: WaitRecord | null; names: string[] | null;
  began: string | null; secs: number | null; err: string | null; run: string | null; event: unknown;
  logs: Array<{ s: number; l: string; m: string }>;
}

export function saveRow(x: SaveInput): SaveRow {
  const a = x.outcome;
  const last = a.journal.length ? a.journal[a.journal.length - 1]!.call.name : null;
  const base: SaveRow = {
    id: x.id, lease: x.leaseId, seq: x.runSeq, kind: 'completed', journal: a.journal, n: a.journal.length, step: last,
    until: null, wait: null, names: null, began: null, secs: null, err: null, run: null, event: null,
    logs: a.logs.map((l) => ({ s: l.seq, l: l.level, m: l.message })),
  };
  switch (a.status) {
    case 'completed': return base;
    case 'failed': return { ...base, kind: 'failed', err: `${a.code}: ${a.message}` };
    case 'waiting': {
      const wait: WaitRecord = { ...a.wait, began: x.began };
      return {
        ...base, kind: 'waiting', step: a.wait.call.name, until: new Date(a.wait.until).toISOString(), wait,
        names: wait.kind === 'event' ? wait.names ?? [] : null, began: new Date(x.began).toISOString(),
      };
    }
    case 'restart':
      return { ...base, kind: 'restart', journal: [], n: 0, step: 'restart', secs: (a.delayMs ?? 0) / 1000, run: newId('run'), event: a.event ?? null };
    case 'retry':
      // Quiet hours: the execution waits on a durable timer; the send (not yet journaled) is made
      // again when they end, so it is recorded once.
      if (a.deferUntil !== undefined) return { ...base, kind: 'deferred', step: 'email.send', until: new Date(a.deferUntil).toISOString() };
      // The host failed (an outage): the entries recorded so far stand; try again later.
      return { ...base, kind: 'retry', secs: retryDelayMs(x.attempts) / 1000 };
  }
}

/** The delay (ms) before a retried activation runs again. */
export const retryDelayMs = (attempts: number) => Math.min(RETRY_MAX_MS, 500 * 2 ** Math.min(attempts, 10));

const SAVE_SQL = `
  WITH o AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS o(id text, lease text, seq int, kind text, journal jsonb, n int,
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
  FROM v WHERE x.id = v.id AND x.id = ANY($2::text[])`;

/** Stores outcomes: `save` resolves once its outcome is written (or discarded as stale). */
export interface Saver {
  save(x: SaveInput): Promise<void>;
}

export function createSaver(pool: pg.Pool): Saver {
  // The ids again as an array: the planner sees how few rows the update touches and takes them by
  // primary key, where the recordset alone (estimated at 100 rows) made it scan the whole table.
  const write = (rows: SaveRow[]) => pool.query(SAVE_SQL, [JSON.stringify(rows), rows.map((r) => r.id)]);
  /** Batches as lib/coalesce.ts forms them; each outcome's own failure, or null once written. */
  const written = coalesce<SaveRow, { err: unknown } | null>(async (rows) => {
    try {
      await write(rows);
      return rows.map(() => null);
    } catch (err) {
      if (rows.length === 1) return [{ err }];
      // One outcome the store refuses (bad data) must not fail the others: each alone.
      return Promise.all(rows.map((r) => write([r]).then(() => null, (e: unknown) => ({ err: e }))));
    }
  }, MAX_BATCH);
  return {
    async save(x) {
      const failure = await written(saveRow(x));
      if (failure) throw failure.err;
    },
  };
}
