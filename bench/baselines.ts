// The servers the bench measures beside headwater (bench/run.ts runs them all; bench/pairs.ts the
// single track target's baseline and floor): what each runs and what it needs, and how one starts.
import { join } from 'node:path';
import { BENCH_DIST, startChild, type Server } from './run-servers.js';

/**
 * The servers measured before headwater, in this order: `only` is their --only key, `pg` / `nats`
 * what they need (skipped with the reason otherwise), `batch` whether they take the batch
 * scenarios (else the single-call `kinds`).
 */
export interface Baseline {
  name: string; only: string; script: string; args: string[]; startMs: number;
  pg?: boolean; nats?: boolean; batch?: boolean; kinds: Array<'track' | 'identify'>;
  /** Takes the batch scenarios as well as its single-call `kinds` (the floors: what the batch targets are read against). */
  batchToo?: boolean;
  /** Only these batch scenarios, once each (no --repeat). */
  batchOnly?: string[];
  /** Runs only with --segments (its single-call `kinds`). */
  segmentsOnly?: boolean;
}
export const BASELINES: readonly Baseline[] = [
  // The ceiling: uWS parsing the JSON and answering 201.
  { name: 'raw-uws', only: 'raw', script: 'raw-uws.js', args: [], startMs: 20_000, kinds: ['track'] },
  { name: 'fastify-pg', only: 'fastify', script: 'fastify-pg.js', args: [], startMs: 30_000, pg: true, kinds: ['track'] },
  // The batch scenarios' baseline.
  { name: 'fastify-pg-batch', only: 'fastify', script: 'fastify-pg-batch.js', args: [], startMs: 30_000, pg: true, batch: true, kinds: [] },
  // The floor: the contract's least work per call on each store. Identify (a new profile per
  // call) where headwater's identify target applies: NATS mode, and embedded.
  { name: 'floor-pglite', only: 'floor', script: 'floor.js', args: ['--store', 'pglite'], startMs: 30_000, batchToo: true, kinds: ['track', 'identify'] },
  { name: 'floor-pg', only: 'floor', script: 'floor.js', args: ['--store', 'pg'], startMs: 30_000, pg: true, kinds: ['track'] },
  { name: 'floor-nats-pg', only: 'floor', script: 'floor.js', args: ['--store', 'pg', '--stream', 'nats'], startMs: 30_000, pg: true, nats: true, batchToo: true, kinds: ['track', 'identify'] },
  // With --segments: the floors in an org with the bench's 50 segments (floor-segments.ts), read
  // against the same floor's track in the same run.
  { name: 'floor-pglite-seg', only: 'floor', script: 'floor.js', args: ['--store', 'pglite', '--segments', 'bench'], startMs: 30_000, segmentsOnly: true, kinds: ['track'] },
  { name: 'floor-nats-pg-seg', only: 'floor', script: 'floor.js', args: ['--store', 'pg', '--stream', 'nats', '--segments', 'bench'], startMs: 30_000, pg: true, nats: true, segmentsOnly: true, kinds: ['track'] },
  // The same floors landing each new event in ClickHouse (chDB) as well: the CPU per event target's
  // floor (ClickHouse's inserts and merges compete with the store for this machine's cores, so the
  // throughput ratios are read against the floors above, which bound the stores' own work).
  { name: 'floor-pglite-ch', only: 'floor', script: 'floor.js', args: ['--store', 'pglite', '--clickhouse', 'chdb'], startMs: 30_000, batchToo: true, batchOnly: ['batch20-users1000'], kinds: [] },
  { name: 'floor-nats-pg-ch', only: 'floor', script: 'floor.js', args: ['--store', 'pg', '--stream', 'nats', '--clickhouse', 'chdb'], startMs: 30_000, pg: true, nats: true, batchToo: true, batchOnly: ['batch20-users1000'], kinds: [] },
  // The floor of headwater's shape on PostgreSQL + NATS: the stream, each batch's statement on a
  // Piscina thread (as headwater's ingestion threads run theirs), ClickHouse: the single-call
  // track target's floor.
  { name: 'floor-nats-pg-ch-piscina', only: 'floor', script: 'floor.js', args: ['--store', 'pg', '--stream', 'nats', '--workers', 'piscina', '--clickhouse', 'chdb'], startMs: 30_000, pg: true, nats: true, kinds: ['track'] },
];

/** Starts `b` on a free local port with `env`; resolves once it listens. */
export function startBaseline(b: Baseline, env: NodeJS.ProcessEnv): Promise<Server> {
  return startChild(b.name, [join(BENCH_DIST, b.script), ...b.args, '--port', '0', '--host', '127.0.0.1'], env, b.startMs);
}

/** The entry named `name` (a bench bug when there is none). */
export function baseline(name: string): Baseline {
  const b = BASELINES.find((x) => x.name === name);
  if (!b) throw new Error(`no bench server named ${name}`);
  return b;
}
