// Piscina task: one batch of ingestion calls -> Postgres effects + answers + events.
// Piscina loads this module once per thread; the thread's own clients (a small pg pool, the catalog
// snapshot cache) are created here from workerData and live as long as the thread.
import { workerData } from 'piscina';
import { createPool, type PgConnection } from '../pipeline/store/postgres.js';
import { SnapshotCache } from '../pipeline/governance/mod.js';
import { processBatch } from '../pipeline/process.js';
import { SegmentCache } from '../pipeline/segments/mod.js';
import type { BatchOutcome, IngestCall } from '../pipeline/types.js';

const { connection, connections } = workerData as { connection: PgConnection; connections: number };
const pool = createPool(connection, connections);
const snapshots = new SnapshotCache();
const segments = new SegmentCache();

export default function run(calls: IngestCall[]): Promise<BatchOutcome> {
  return processBatch({ pool, snapshots, segments, concurrency: connections }, calls);
}
