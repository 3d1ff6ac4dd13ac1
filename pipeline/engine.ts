// The ingestion engine of a process: takes batches from the stream, runs them on the Piscina pool,
// hands the resulting events to the event stream, and answers. With `writeEvents`, this process
// also lands the event stream in ClickHouse (the serve process with chDB, or any process with a
// ClickHouse server).
import { Piscina } from 'piscina';
import type pg from 'pg';
import { SnapshotCache } from './governance/mod.js';
import { processBatch } from './process.js';
import { clearOutbox, SegmentCache, startOutboxRelay } from './segments/mod.js';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../api/log.js';
import type { PgConnection } from './store/postgres.js';
import { insertEvents } from './store/events.js';
import type { BatchOutcome, IngestCall } from './types.js';
import type { IngestStream, EventStream } from './stream/mod.js';

export interface EngineOptions {
  ingest: IngestStream;
  events: EventStream;
  connection: PgConnection;
  /** This thread's pool: clears published system events from the outbox and relays orphans. */
  pool: pg.Pool;
  threads: number;
  /** Postgres connections per worker thread (calls of a batch processed at once). */
  connectionsPerThread?: number;
  ch?: ClickHouseClient;
  log: Logger;
  /**
   * Run batches on this thread with this pool instead of Piscina threads. For embedded PGlite: it
   * is a single Postgres session, and its socket multiplexer interleaves the extended-protocol
   * messages of concurrent connections ("unnamed prepared statement does not exist"), so the whole
   * process must use one connection.
   */
  inline?: pg.Pool;
}

export interface Engine { close(): Promise<void> }

export function startEngine(o: EngineOptions): Engine {
  const run = o.inline ? inlineRunner(o.inline) : piscinaRunner(o);
  // Few large inserts: every insert is a ClickHouse part to merge later, and merges cost CPU that
  // ingestion needs. (With JetStream nobody waits for these writes; in-process the batch is what
  // is queued, since answers wait for their events.)
  const writer = o.ch ? o.events.consume((events) => insertEvents(o.ch!, events), { maxBatch: 5_000, lingerMs: 250 }) : undefined;
  // One batch in flight per Piscina thread (inline: one, since the connection is shared).
  const consumer = o.ingest.consume(async (calls: IngestCall[]) => {
    const out = await run.run(calls);
    if (out.events.length) await o.events.publish(out.events);
    // Best effort: a row left behind is republished by the relay, and ClickHouse collapses the copy.
    if (out.outbox.length) await clearOutbox(o.pool, out.outbox).catch((err) => o.log.warn('outbox clear failed', { err: String(err) }));
    return out.results;
  }, { maxInFlight: o.inline ? 1 : o.threads });
  const relay = startOutboxRelay({ pool: o.pool, publish: (events) => o.events.publish(events), log: o.log });
  return {
    async close() {
      await relay.close();
      await consumer.close();
      await writer?.close();
      await run.close();
    },
  };
}

interface Runner { run(calls: IngestCall[]): Promise<BatchOutcome>; close(): Promise<void> }

function inlineRunner(pool: pg.Pool): Runner {
  const snapshots = new SnapshotCache();
  const segments = new SegmentCache();
  return { run: (calls) => processBatch({ pool, snapshots, segments, concurrency: 1 }, calls), close: async () => {} };
}

function piscinaRunner(o: EngineOptions): Runner {
  const pool = new Piscina({
    filename: new URL('../workers/ingest-task.js', import.meta.url).href,
    workerData: { connection: o.connection, connections: o.connectionsPerThread ?? 4 },
    minThreads: o.threads, maxThreads: o.threads, idleTimeout: 60_000,
  });
  return { run: (calls) => pool.run(calls) as Promise<BatchOutcome>, close: () => pool.destroy() };
}
