// Activation outcomes are stored in batches formed by lib/coalesce.ts: while one save statement runs,
// the outcomes that finish meanwhile queue and go together in the next (no timer). Each
// outcome is checked under its row lock as before (still this lease's, still running or waiting: a
// cancel or a takeover after the lease expired discards it), its logs stored (duplicates of a repeated
// activation ignored), and a new event wait answered at once by an event that reached the inbox while
// the activation ran (answerWaits in landed.ts takes the same row locks, also in id order). Each row
// is found and locked by its primary key: joined to the active executions instead, the planner of a
// store without statistics scanned all of them for every save (3 ms a statement with 3,000 due). A batch
// that fails is saved again one outcome at a time, so one outcome the store refuses fails alone.
// The statement is headwater_save_outcomes (migration 28): as a function its plan is kept for the
// session instead of being made again for every batch.
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
      const wait: WaitRecord = { ...a.wait, began: x.began, lease: x.leaseId };
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

/** Stores outcomes: `save` resolves once its outcome is written (or discarded as stale). */
export interface Saver {
  save(x: SaveInput): Promise<void>;
}

export function createSaver(pool: pg.Pool): Saver {
  // The ids again as an array: the planner sees how few rows the update touches and takes them by
  // primary key, where the recordset alone (estimated at 100 rows) made it scan the whole table.
  const write = (rows: SaveRow[]) => pool.query('SELECT headwater_save_outcomes($1::jsonb, $2::text[])', [JSON.stringify(rows), rows.map((r) => r.id)]);
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
