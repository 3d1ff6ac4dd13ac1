// Prometheus metrics of a serve process (prom-client, one registry per service, no global state):
// what an operator decides from (docs/scaling.md): request rates and latencies per route, calls
// by outcome, the gate's backlog and refusals, stream lag, worker-pool utilization, batch and
// insert latencies, Postgres pool waits, runner and outbox backlogs, purposeful drops.
import type pg from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CallResult, IngestCall } from '../pipeline/types.js';
import type { EngineObserver, PoolStats } from '../pipeline/engine.js';
import type { StreamLag } from '../pipeline/stream/mod.js';
import type { DropReason } from '../pipeline/drops.js';

/** How often the event-loop delay histogram is sampled. */
const EVENT_LOOP_SAMPLE_MS = 100;

export interface MetricSources {
  pool: pg.Pool;
  /** The HTTP front end's gate (serve only). */
  backlog?: () => { calls: number; oldestMs: number };
  ingestLag: () => Promise<StreamLag>;
  eventLag: () => Promise<StreamLag>;
  workers: () => PoolStats;
  /** Events of this process's own batches waiting for their ClickHouse insert. */
  unlanded?: () => number;
  drops: ReadonlyMap<DropReason, number>;
  /** Whether the background loops can be told of other processes' work (pipeline/wakes.ts). */
  listening: () => boolean;
}

const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5];

/** What a call's answer says: accepted, replayed, quarantined, rejected (4xx) or failed (5xx). */
export function outcomeOf(call: IngestCall, r: CallResult): string {
  if (r.status >= 500) return 'failed';
  if (r.status >= 400) return 'rejected';
  if (r.status === 201) return 'accepted';
  const data = (r as { data?: { status?: unknown; id?: unknown } }).data;
  if (data?.status === 'quarantined') return 'quarantined';
  return call.kind === 'track' ? 'replayed' : 'accepted';
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly duration: Histogram<'route' | 'method'>;
  private readonly calls: Counter<'kind' | 'outcome'>;
  readonly engine: EngineObserver;

  constructor() {
    const registers = [this.registry];
    // The event-loop delay is sampled every 100 ms, not prom-client's 10 ms: its timer woke an idle
    // server 100 times a second (0.8 of its 1.5 % of a core idle). Stalls that matter last longer.
    collectDefaultMetrics({ register: this.registry, prefix: 'headwater_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.requests = new Counter({ name: 'headwater_http_requests_total', help: 'HTTP answers by route template, method and status.', labelNames: ['route', 'method', 'status'], registers });
    this.duration = new Histogram({ name: 'headwater_http_request_duration_seconds', help: 'Time from the request to its answer, by route template.', labelNames: ['route', 'method'], buckets: LATENCY, registers });
    this.calls = new Counter({ name: 'headwater_ingest_calls_total', help: 'Ingestion calls by kind and outcome: accepted, replayed, quarantined, rejected (4xx), failed (5xx), refused (503 while behind).', labelNames: ['kind', 'outcome'], registers });
    const batch = new Histogram({ name: 'headwater_ingest_batch_seconds', help: 'Time a worker took for one batch of calls (Postgres included).', buckets: LATENCY, registers });
    const batchCalls = new Counter({ name: 'headwater_ingest_batch_calls_total', help: 'Calls processed in batches by this process.', registers });
    const insert = new Histogram({ name: 'headwater_event_insert_seconds', help: 'Time of one ClickHouse insert of events.', buckets: LATENCY, registers });
    const inserted = new Counter({ name: 'headwater_events_inserted_total', help: 'Events inserted into ClickHouse by this process (re-emitted copies included).', registers });
    const held = new Histogram({ name: 'headwater_event_landing_held_seconds', help: 'Time the embedded event writer held a batch while ingestion calls stood in a queue (at most 2 s after its first event).', buckets: LATENCY, registers });
    const handedBack = new Counter({ name: 'headwater_ingest_handed_back_calls_total', help: 'Calls a worker left out of its batch because their org was changing its segments or promoting (they come again 250 ms later).', registers });
    this.engine = {
      batch: (s, n) => { batch.observe(s); batchCalls.inc(n); },
      handedBack: (n) => handedBack.inc(n),
      insert: (s, n) => { insert.observe(s); inserted.inc(n); },
      held: (s) => held.observe(s),
    };
  }

  observeHttp = (route: string, method: string, status: number, seconds: number): void => {
    this.requests.inc({ route, method, status: String(status) });
    this.duration.observe({ route, method }, seconds);
  };

  observeCalls = (calls: IngestCall[], results: CallResult[] | undefined): void => {
    for (let i = 0; i < calls.length; i++) {
      this.calls.inc({ kind: calls[i]!.kind, outcome: results ? outcomeOf(calls[i]!, results[i]!) : 'refused' });
    }
  };

  /** Gauges read when scraped. */
  attach(s: MetricSources): void {
    const registers = [this.registry];
    const backlog = s.backlog;
    if (backlog) {
      new Gauge({ name: 'headwater_ingest_waiting_calls', help: 'Calls of this front end waiting for their results (the gate refuses past its limits).', registers,
        collect() { this.set(backlog().calls); } });
      new Gauge({ name: 'headwater_ingest_oldest_wait_seconds', help: 'How long the oldest waiting call of this front end has waited.', registers,
        collect() { this.set(backlog().oldestMs / 1000); } });
    }
    new Gauge({ name: 'headwater_stream_pending_messages', help: 'Messages waiting in a stream (not yet acknowledged).', labelNames: ['stream'], registers,
      async collect() {
        const [i, e] = await Promise.all([s.ingestLag().catch(() => undefined), s.eventLag().catch(() => undefined)]);
        if (i) this.set({ stream: 'ingest' }, i.pending);
        if (e) this.set({ stream: 'events' }, e.pending);
      } });
    new Gauge({ name: 'headwater_stream_oldest_seconds', help: 'Age of the oldest message waiting in a stream.', labelNames: ['stream'], registers,
      async collect() {
        const [i, e] = await Promise.all([s.ingestLag().catch(() => undefined), s.eventLag().catch(() => undefined)]);
        if (i) this.set({ stream: 'ingest' }, i.oldestMs / 1000);
        if (e) this.set({ stream: 'events' }, e.oldestMs / 1000);
      } });
    new Gauge({ name: 'headwater_worker_threads', help: 'Ingestion worker threads of this process.', registers, collect() { this.set(s.workers().threads); } });
    new Gauge({ name: 'headwater_worker_utilization', help: 'Share of the ingestion workers\' time spent busy (0-1).', registers, collect() { this.set(s.workers().utilization); } });
    if (s.unlanded) {
      const unlanded = s.unlanded;
      new Gauge({ name: 'headwater_event_landing_waiting_events', help: 'Events of this process\'s own batches, answered and waiting for their ClickHouse insert (their calls are acknowledged after it); past 20,000 the process takes no more batches.', registers,
        collect() { this.set(unlanded()); } });
    }
    new Gauge({ name: 'headwater_worker_queued_batches', help: 'Batches waiting for a free worker thread.', registers, collect() { this.set(s.workers().queued); } });
    new Gauge({ name: 'headwater_pg_pool_connections', help: 'Postgres pool connections by state (waiting: requests waiting for one).', labelNames: ['state'], registers,
      collect() {
        this.set({ state: 'total' }, s.pool.totalCount);
        this.set({ state: 'idle' }, s.pool.idleCount);
        this.set({ state: 'waiting' }, s.pool.waitingCount);
      } });
    new Gauge({ name: 'headwater_backlog', help: 'Work stored and waiting: due journey executions, pending webhook deliveries and e-mails, system events not yet landed.', labelNames: ['kind'], registers,
      async collect() {
        const r = await s.pool.query<{ executions: string; webhooks: string; emails: string; outbox: string }>(
          `SELECT (SELECT count(*) FROM executions WHERE status IN ('running', 'waiting') AND wake_at <= now()) AS executions,
                  (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS webhooks,
                  (SELECT count(*) FROM emails WHERE status = 'pending') AS emails,
                  (SELECT count(*) FROM event_outbox) AS outbox`).catch(() => undefined);
        const row = r?.rows[0];
        if (!row) return;
        for (const k of ['executions', 'webhooks', 'emails', 'outbox'] as const) this.set({ kind: k }, Number(row[k]));
      } });
    new Gauge({ name: 'headwater_work_notifications_listening', help: 'Whether this process is told of work other processes make (1; embedded always): 0 while its LISTEN connection is down and its background loops poll.', registers,
      collect() { this.set(s.listening() ? 1 : 0); } });
    new Counter({ name: 'headwater_dropped_total', help: 'What this process dropped or collapsed on purpose, by reason (POST /v1/events/reconcile has the totals of every process).', labelNames: ['reason'], registers,
      collect() { this.reset(); for (const [reason, n] of s.drops) this.inc({ reason }, n); } });
  }

  text(): Promise<string> { return this.registry.metrics(); }
  get contentType(): string { return this.registry.contentType; }
}
