// Piscina task: one batch of ingestion calls -> Postgres effects + answers + events.
// Piscina loads this module once per thread; the thread's own clients (a small pg pool, the catalog,
// segment and identity caches) are created here from workerData and live as long as the thread.
import { workerData } from 'piscina';
import { createPool, type PgConnection } from '../pipeline/store/postgres.js';
import { SnapshotCache } from '../pipeline/governance/mod.js';
import { processBatch } from '../pipeline/process.js';
import { busyOrgs, handBackBusyOrgs } from '../pipeline/busy-orgs.js';
import { SegmentCache } from '../pipeline/segments/mod.js';
import { IdentityCache } from '../pipeline/identity-cache.js';
import type { BatchOutcome, IngestCall, TaskFailure } from '../pipeline/types.js';
import { isCollectTask, type CollectAnswer, type CollectTask } from '../pipeline/quiet-collect.js';
import { HeapCollector } from './idle-gc.js';

const { connection, connections } = workerData as { connection: PgConnection; connections: number };
const pool = createPool(connection, connections);
// A changing org's calls go back to the stream instead of holding the batch (busy-orgs.ts).
handBackBusyOrgs(pool);
const snapshots = new SnapshotCache();
const segments = new SegmentCache();
// Identifier owners this thread read or wrote: the track fast path (fast-track.ts) checks them.
const identities = new IdentityCache();
// Beside other sessions: an org whose segments or catalog are changing is left for later, and asked
// about before its next batches while it is (busy-orgs.ts).
const busy = busyOrgs(pool);
// A burst's garbage is given back when the pool has gone quiet (idle-gc.ts).
const heap = new HeapCollector();


export default async function run(calls: IngestCall[] | CollectTask): Promise<BatchOutcome | TaskFailure | CollectAnswer> {
  if (isCollectTask(calls)) return heap.collect(calls.collect.last);
  try {
    return await processBatch({ pool, snapshots, segments, identities, concurrency: connections, busy }, calls);
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    return { failed: { message: e instanceof Error ? e.message : String(e), ...(typeof code === 'string' ? { code } : {}) } };
  }
}
