// The ingestion engine of a process: takes batches from the stream, runs them on the Piscina pool,
// hands the resulting events to the event stream, and answers (embedded: without waiting for
// ClickHouse, see landing.ts). With `ch`, this process also lands the event stream in ClickHouse
// (the serve process with chDB, or any process with a ClickHouse server).
import { Piscina } from 'piscina';
import type pg from 'pg';
import { SnapshotCache } from './governance/mod.js';
import { processBatch } from './process.js';
import { IdentityCache } from './identity-cache.js';
import { clearOutbox, SegmentCache, startOutboxRelay } from './segments/mod.js';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../lib/log.js';
import type { Wakes } from './wakes.js';
import type { PgConnection } from './store/postgres.js';
import { insertEvents } from './store/events.js';
import { startLanding } from './landing.js';
import { startDirectLanding } from './direct-landing.js';
import { isolate } from './isolate.js';
import { QuietCollector } from './quiet-collect.js';
import type { BatchOutcome, EventRecord, IngestCall } from './types.js';
import type { TaskFailure } from './types.js';
import type { IngestStream, EventStream, IngestResults } from './stream/mod.js';
import type { DropSink } from './drops.js';

export interface EngineOptions {
  ingest: IngestStream;
  events: EventStream;
  connection: PgConnection;
  /** This thread's pool: clears published system events from the outbox and relays orphans. */
  pool: pg.Pool;
  threads: number;
  /**
   * URL of the Piscina task module (workers/ingest-task.js). Given by the caller that wires the
   * process, so that the pipeline does not depend on the workers folder above it.
   */
  workerModule: string;
  /** Postgres connections per worker thread (calls of a batch processed at once). */
  connectionsPerThread?: number;
  ch?: ClickHouseClient;
  log: Logger;
  /**
   * Run batches on this thread with this pool instead of Piscina threads. For embedded PGlite: it
   * is a single Postgres session behind its host thread, which runs one connection's transaction at
   * a time (pglite-host.ts), so threads with connections of their own would only queue there, and
   * every batch would pay the structured clone to and from its thread.
   */
  inline?: pg.Pool;
  /**
   * Answer calls once Postgres committed them, before their events are in ClickHouse (landing.ts).
   * Only for the in-process stream with embedded Postgres, where answered events can be recovered.
   */
  answerBeforeLanding?: boolean;
  /** How the outbox relay rests (pipeline/wakes.ts). */
  wakes: Wakes;
  /** How long the ClickHouse writer waits to fill an insert (up to 5,000 events), ms (api/node.ts picks it per mode). */
  eventLingerMs: number;
  /**
   * Runs after each ClickHouse insert, before the events are acknowledged (journey triggers and
   * waits): when it throws, the events come again, so it must be idempotent.
   */
  onLanded?: (events: EventRecord[]) => Promise<void>;
  /**
   * Resolves, with the milliseconds it held them, when a batch of events may land, given its first
   * event's receipt (ms): embedded, landing yields to ingestion (landing-yield.ts). Absent: at once.
   */
  yieldLanding?: (since: number) => Promise<number>;
  /** Counts replayed track calls (their re-emitted events collapse in ClickHouse). */
  drops?: DropSink;
  /** Told how long each batch and each ClickHouse insert took (for metrics). */
  observe?: EngineObserver;
}

export interface EngineObserver {
  batch(seconds: number, calls: number): void;
  insert(seconds: number, events: number): void;
  /** How long the event writer held a batch for ingestion (yieldLanding), every batch it asked. */
  held?(seconds: number): void;
  /** Calls left out of a batch for later: their org was busy (busy-orgs.ts). */
  handedBack?(calls: number): void;
}

/** The worker pool's state: threads, the share of their time busy (0-1), batches waiting for one. */
export interface PoolStats { threads: number; utilization: number; queued: number }

/**
 * The events of track calls answered from their stored answer (200 with the original Event) that
 * are not emitted again: the original landed, or is on its way and its own batch comes again if
 * that fails. Emitted again only where the original's landing may have been lost with this very
 * delivery: a redelivered call (`redelivered`), or every call of a batch that failed and ran call by
 * call (`redelivered` undefined: its first run's commits had no hand-over). An event this batch
 * also wrote (a messageId used twice in it) is kept. Returns the ids to leave out and how many
 * replays are emitted again.
 */
function settledReplays(calls: IngestCall[], results: BatchOutcome['results'], redelivered: boolean[] | undefined): { skip: Set<string>; again: number } {
  const skip = new Set<string>();
  const written = new Set<string>();
  let again = 0;
  for (let i = 0; i < calls.length; i++) {
    const r = results[i] as { status: number; data?: { id?: unknown } } | undefined;
    if (calls[i]!.kind !== 'track' || typeof r?.data?.id !== 'string') continue;
    if (r.status === 201) written.add(r.data.id);
    else if (r.status === 200) {
      if (redelivered === undefined || redelivered[i]) again++;
      else skip.add(r.data.id);
    }
  }
  for (const id of written) skip.delete(id);
  return { skip, again };
}

export interface Engine {
  stats(): PoolStats;
  /** Events of this process's own batches answered and waiting for their ClickHouse insert (direct-landing.ts). */
  unlanded(): number;
  close(): Promise<void>;
}

export function startEngine(o: EngineOptions): Engine {
  const run = o.inline ? inlineRunner(o.inline) : piscinaRunner(o);
  // Few large inserts: every insert is a ClickHouse part to merge later, and merges cost CPU that
  // ingestion needs. Nobody's answer waits for these writes, except with an in-process stream and
  // a Postgres server (answered events could not be recovered there: see answerBeforeLanding).
  const landEvents = async (events: EventRecord[]) => {
    const t0 = performance.now();
    await insertEvents(o.ch!, events);
    o.observe?.insert((performance.now() - t0) / 1000, events.length);
    if (o.onLanded) await o.onLanded(events);
  };
  const writer = o.ch ? o.events.consume(async (events) => {
    if (o.yieldLanding && events.length) {
      const heldMs = await o.yieldLanding(Date.parse(events[0]!.receivedAt));
      o.observe?.held?.(heldMs / 1000);
    }
    await landEvents(events);
  }, { maxBatch: 5_000, lingerMs: o.eventLingerMs }) : undefined;
  // This process's own batches land here directly where the ingestion stream redelivers what is
  // not acknowledged (its batches offer `defer`): see direct-landing.ts.
  const direct = o.ch && !o.answerBeforeLanding && !o.inline && o.ingest.redelivers
    ? startDirectLanding({ land: landEvents, handOver: (events) => o.events.publish(events), maxBatch: 5_000, lingerMs: o.eventLingerMs, log: o.log })
    : undefined;
  // The outbox rows of the system events handed over or landed.
  const clearLanded = (outbox: string[]) => clearOutbox(o.pool, outbox, o.log);
  const landing = o.answerBeforeLanding ? startLanding({ pool: o.pool, events: o.events, log: o.log }) : undefined;
  // A failed batch runs again call by call, so one bad call neither holds the others back nor
  // returns forever (isolate.ts); an outage still fails the batch, which then comes again.
  const apply = async (calls: IngestCall[], redelivered: boolean[]): Promise<BatchOutcome> => {
    let out: BatchOutcome;
    let isolated = false;
    const t0 = performance.now();
    try { out = await run.run(calls); } catch (err) {
      isolated = true;
      out = await isolate({ run: run.run, pool: o.pool, log: o.log }, calls, err);
    }
    const { skip, again } = settledReplays(calls, out.results, isolated ? undefined : redelivered);
    if (skip.size) out = { ...out, events: out.events.filter((e) => !skip.has(e.id)) };
    if (o.drops) o.drops.add('replayed_events', again);
    o.observe?.batch((performance.now() - t0) / 1000, calls.length - (out.later?.length ?? 0));
    if (out.later?.length) o.observe?.handedBack?.(out.later.length);
    return out;
  };
  // One batch in flight per Piscina thread. Inline, two: PGlite's one session serializes their
  // transactions, while one batch's JavaScript (planning, answers, the hand-over) runs during the
  // other's statements; with one, the main thread and PGlite's thread each idled about half the
  // time, waiting for the other.
  const consumer = o.ingest.consume(async (calls: IngestCall[], info) => {
    if (landing) {
      const batch = await landing.begin();
      let out: BatchOutcome;
      try { out = await apply(calls, info.redelivered); } catch (err) { landing.abandon(batch); throw err; }
      landing.handOver(batch, out.events, out.outbox);
      return forStream(out);
    }
    const out = await apply(calls, info.redelivered);
    // Committed: on JetStream the calls are answered now, and acknowledged after the hand-over.
    info.answer?.(out.results);
    if (direct && info.defer) {
      await direct.room();
      info.defer(direct.land(out.events).then(() => clearLanded(out.outbox)));
      return forStream(out);
    }
    if (out.events.length) await o.events.publish(out.events);
    await clearLanded(out.outbox);
    return forStream(out);
  }, { maxInFlight: o.inline ? INLINE_BATCHES : o.threads });
  const relay = startOutboxRelay({ pool: o.pool, publish: (events) => o.events.publish(events), log: o.log, wakes: o.wakes });
  return {
    stats: () => run.stats(),
    unlanded: () => direct?.waiting() ?? 0,
    async close() {
      await relay.close();
      // The consumer's last batches wait for their direct landing, which lands at once from now.
      await Promise.all([consumer.close(), direct?.close()]);
      await landing?.close();
      await writer?.close();
      await run.close();
    },
  };
}

/** A batch's results for the stream: calls left for later (busy orgs) are handed back. */
const forStream = (out: BatchOutcome): IngestResults => (out.later?.length ? { results: out.results, later: out.later } : out.results);

interface Runner { run(calls: IngestCall[]): Promise<BatchOutcome>; stats(): PoolStats; close(): Promise<void> }

/** Batches in flight on the inline runner (see the consumer in startEngine). */
const INLINE_BATCHES = 2;

function inlineRunner(pool: pg.Pool): Runner {
  const snapshots = new SnapshotCache();
  const segments = new SegmentCache();
  // Identifier owners learned here stay usable while their org's identity version holds
  // (fast-track.ts checks it in the writing statement).
  const identities = new IdentityCache();
  let running = 0;
  return {
    // Busy while a batch runs on this thread.
    stats: () => ({ threads: 1, utilization: running > 0 ? 1 : 0, queued: 0 }),
    run: async (calls) => {
      running++;
      try { return await processBatch({ pool, snapshots, segments, concurrency: 1, serial: true, identities }, calls); } finally { running--; }
    },
    close: async () => identities.close(),
  };
}

function piscinaRunner(o: EngineOptions): Runner {
  const pool = new Piscina({
    filename: o.workerModule,
    workerData: { connection: o.connection, connections: o.connectionsPerThread ?? 4 },
    minThreads: o.threads, maxThreads: o.threads, idleTimeout: 60_000,
  });
  // A burst's memory is given back once the pool has run nothing for 5 s (quiet-collect.ts).
  const quiet = new QuietCollector({ run: (task) => pool.run(task), threads: o.threads });
  return {
    stats: () => ({ threads: pool.threads.length, utilization: pool.utilization, queued: pool.queueSize }),
    async run(calls) {
      const out = await quiet.around(() => pool.run(calls) as Promise<BatchOutcome | TaskFailure>);
      if ('failed' in out) throw Object.assign(new Error(out.failed.message), out.failed.code ? { code: out.failed.code } : {});
      return out;
    },
    close: () => { quiet.close(); return pool.destroy(); },
  };
}
