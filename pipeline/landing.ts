// Embedded mode answers ingestion calls once Postgres committed them, without waiting for their
// events to reach ClickHouse, so chDB gets few large inserts instead of one per batch (each insert
// is a part to merge later). Nothing answered is lost in a crash: every answered event is also in
// Postgres, track events in `messages.result` (its created_at is the start of the writing
// transaction) and system events in `event_outbox` until landed (the relay lands orphans).
// The tracker knows the start of every batch whose events are not all in ClickHouse yet; the
// earliest (less a margin for clock steps) is stored as `event_landing.landed_before` once a
// second. At start, every event stored at or after it is landed again: ReplacingMergeTree
// collapses the copies by event id.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../lib/log.js';
import { startPeriodic } from './periodic.js';
import { clearOutbox } from './segments/mod.js';
import { insertEvents } from './store/events.js';
import type { EventStream } from './stream/mod.js';
import type { EventRecord } from './types.js';
import type { DropSink } from './drops.js';

/** A batch of calls being processed, or answered with events not all landed. */
export interface LandingBatch { readonly since: number }

export interface LandingTracker {
  /** Waits while too many answered events wait for ClickHouse (backpressure), then opens a batch. */
  begin(): Promise<LandingBatch>;
  /** The batch committed: lands its events in the background, then (within a second) clears their outbox rows. */
  handOver(b: LandingBatch, events: EventRecord[], outbox: string[]): void;
  /** The batch failed (rolled back, redelivered later): it holds nothing. */
  abandon(b: LandingBatch): void;
  close(): Promise<void>;
}

export interface LandingOptions {
  pool: pg.Pool;
  events: EventStream;
  log: Logger;
  /** Answered events not yet landed before new batches wait; default 50,000. */
  maxUnlanded?: number;
  /** How often the checkpoint is stored; default 1 s. */
  intervalMs?: number;
}

/** Tolerated step of the wall clock between a batch start and its transaction's now(). */
const MARGIN_MS = 5_000;
/**
 * How often the messages' BRIN index summarizes the pages written since (recovery scans it by
 * created_at). The work grows with the pages written meanwhile and holds the store's only thread:
 * once a minute under batch load it took 161 ms in one statement, set the p99 of every answer
 * waiting behind it; every 2 s it is a few ms. It stops with the checkpoint when idle.
 */
const SUMMARIZE_EVERY_MS = 2_000;
const RECOVER_PAGE = 5_000;

/** Every event stored in `messages` before `at` (ms) is in ClickHouse. */
const writeCheckpoint = (pool: pg.Pool, at: number) => pool.query(
  `INSERT INTO event_landing (id, landed_before) VALUES (1, $1)
   ON CONFLICT (id) DO UPDATE SET landed_before = EXCLUDED.landed_before`, [new Date(at).toISOString()]);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export function startLanding(o: LandingOptions): LandingTracker {
  const maxUnlanded = o.maxUnlanded ?? 50_000;
  const open = new Set<LandingBatch>();
  const landing = new Set<Promise<void>>();
  let unlanded = 0;
  /** Outbox rows of landed system events, not cleared yet. */
  const landedOutbox: string[] = [];
  let room: Array<() => void> = [];
  let closing = false;
  let stored: number | undefined;
  /** Batches begun so far, and how many had begun when a checkpoint was last stored with none open. */
  let begun = 0;
  let quietAt = -1;
  let summarized = Date.now();

  const checkpoint = () => {
    let min = Date.now();
    for (const b of open) if (b.since < min) min = b.since;
    return min - MARGIN_MS;
  };
  const finish = (b: LandingBatch, n: number) => {
    open.delete(b);
    unlanded -= n;
    if (unlanded < maxUnlanded) { for (const r of room) r(); room = []; }
  };
  const store = async () => {
    if (landedOutbox.length) {
      await clearOutbox(o.pool, landedOutbox.splice(0), o.log);
    }
    if (stored !== undefined && begun === quietAt) return; // idle since the last store: it still holds
    const at = checkpoint();
    if (stored !== undefined && at - stored < 1_000) return;
    const idle = open.size === 0;
    const seen = begun;
    await writeCheckpoint(o.pool, at);
    stored = at;
    if (idle) quietAt = seen;
    if (Date.now() - summarized >= SUMMARIZE_EVERY_MS) {
      summarized = Date.now();
      await o.pool.query(`SELECT brin_summarize_new_values('messages_created_brin')`);
    }
  };
  const periodic = startPeriodic(o.intervalMs ?? 1_000, store, o.log, 'storing the event landing checkpoint failed');

  async function land(b: LandingBatch, events: EventRecord[], outbox: string[]) {
    for (let attempt = 1; ; attempt++) {
      try {
        await o.events.publish(events);
        break;
      } catch (err) {
        // The batch stays open, so the checkpoint stays before it: a restart lands it if we cannot.
        if (closing) return;
        o.log.warn('landing answered events failed; retrying', { err: String(err), events: events.length, attempt });
        await sleep(Math.min(5_000, 100 * 2 ** attempt));
      }
    }
    // Cleared with the next checkpoint, in one statement for every batch landed meanwhile (the
    // connection is the one ingestion waits for). Best effort: a row left behind is relayed again.
    landedOutbox.push(...outbox);
    finish(b, events.length);
  }

  return {
    async begin() {
      while (unlanded >= maxUnlanded && !closing) await new Promise<void>((r) => room.push(r));
      const b = { since: Date.now() };
      open.add(b);
      begun++;
      return b;
    },
    handOver(b, events, outbox) {
      if (events.length === 0) { finish(b, 0); return; }
      unlanded += events.length;
      const p = land(b, events, outbox).finally(() => landing.delete(p));
      landing.add(p);
    },
    abandon(b) { finish(b, 0); },
    async close() {
      // Lets the events in hand land (the event stream closes after this), for 10 s at most.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([...landing]), new Promise((r) => { timer = setTimeout(r, 10_000); })]);
      clearTimeout(timer);
      closing = true;
      for (const r of room) r();
      await periodic.close();
      stored = undefined;
      await store().catch((err) => o.log.warn('storing the event landing checkpoint failed', { err: String(err) }));
    },
  };
}

/**
 * Lands again every track event stored at or after the checkpoint (a previous run may have answered
 * them and stopped before they reached ClickHouse), with `onLanded` as the writer runs it. Returns how many were landed.
 */
export interface RecoverOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: Logger;
  onLanded?: (events: EventRecord[]) => Promise<void>;
  drops?: DropSink;
}

export async function recoverLanding(o: RecoverOptions): Promise<number> {
  const { pool, ch, log, onLanded } = o;
  const startedAt = Date.now();
  const cp = await pool.query<{ landed_before: string }>('SELECT landed_before FROM event_landing WHERE id = 1');
  // Everything stored before this start is landed once this returns: say so before any batch runs
  // (a first run killed before its first periodic store must find a checkpoint).
  const landed = () => writeCheckpoint(pool, startedAt - MARGIN_MS);
  // No checkpoint: a new database, or one written by a version that answered only landed events.
  if (!cp.rows[0]) { await landed(); return 0; }
  await pool.query(`SELECT brin_summarize_new_values('messages_created_brin')`);
  let after: [string, string, string, string] | undefined;
  let total = 0;
  for (;;) {
    // created_at as text: microseconds, which a JS Date would cut (and the keyset would stall on).
    const r = await pool.query<{ created_at: string; org_id: string; app_id: string; message_id: string; event: EventRecord }>(
      `SELECT created_at::text AS created_at, org_id, app_id, message_id, result->'event' AS event FROM messages
       WHERE created_at >= $1 AND result ? 'event'
         ${after ? 'AND (created_at, org_id, app_id, message_id) > ($2::timestamptz, $3, $4, $5)' : ''}
       ORDER BY created_at, org_id, app_id, message_id LIMIT ${RECOVER_PAGE}`,
      after ? [after[0], ...after] : [cp.rows[0].landed_before]);
    if (r.rows.length === 0) break;
    const events = r.rows.map((x) => x.event);
    await insertEvents(ch, events);
    // What landing means for journeys (triggers, waits) is repeated with it: it is idempotent.
    if (onLanded) await onLanded(events);
    total += r.rows.length;
    const last = r.rows[r.rows.length - 1]!;
    after = [last.created_at, last.org_id, last.app_id, last.message_id];
    if (r.rows.length < RECOVER_PAGE) break;
  }
  await landed();
  o.drops?.add('relanded_events', total);
  if (total) log.info('landed events answered before the last stop', { count: total, since: cp.rows[0].landed_before });
  return total;
}
