// Embedded mode (no NATS_URL): the same two streams over in-memory work queues. Not durable across
// a crash (nothing is in embedded mode), but bounded: a full queue refuses (503) instead of growing.
import type { Logger } from '../../lib/log.js';
import type { DropSink } from '../drops.js';
import type { CallResult, EventRecord, IngestCall } from '../types.js';
import { StreamUnavailableError } from './errors.js';
import { DEFAULT_MAX_BATCH, DEFAULT_RESULT_TIMEOUT_MS, HAND_BACK_MS, resultsOf, type EventStream, type IngestStream } from './types.js';
import { WorkQueue } from './work-queue.js';
import { createWaiter, deliver, type Waiter } from './waiter.js';

export interface InProcessOptions {
  log: Logger;
  /** Calls (and, separately, events) queued or in flight before submit/publish refuse; default 100k. */
  maxPending?: number;
  resultTimeoutMs?: number;
  /** Delay before a failed batch is retried, by attempt (default 100 ms doubling up to 5 s). */
  retryDelayMs?: (attempts: number) => number;
  /** Counts calls skipped because their caller had already been answered 503. */
  drops?: DropSink;
}

interface Item<V, R> { value: V; waiter: Waiter<R>; index: number }

export function createInProcessStreams(opts: InProcessOptions): { ingest: IngestStream; events: EventStream } {
  const maxPending = opts.maxPending ?? 100_000;
  const resultTimeoutMs = opts.resultTimeoutMs ?? DEFAULT_RESULT_TIMEOUT_MS;
  const retryDelayMs = opts.retryDelayMs ?? ((a: number) => Math.min(5_000, 100 * 2 ** (a - 1)));
  const log = opts.log.child({ component: 'stream', mode: 'in-process' });

  const calls = new WorkQueue<Item<IngestCall, CallResult>>({ maxPending, log, retryDelayMs });
  const submits = new Set<Waiter<CallResult>>();
  let ingestClosed = false;

  const ingest: IngestStream = {
    submit(batch, so) {
      if (batch.length === 0) return Promise.resolve([]);
      if (ingestClosed) return Promise.reject(new StreamUnavailableError('the ingestion stream is closed'));
      const { waiter, promise } = createWaiter<CallResult>(batch.length, submits, {
        timeoutMs: resultTimeoutMs, onTimeout: () => new StreamUnavailableError('no result from the ingestion workers in time'),
      });
      waiter.abandoned = so?.abandoned;
      if (!calls.push(batch.map((value, index) => ({ value, waiter, index })))) {
        waiter.reject(new StreamUnavailableError('the ingestion queue is full'));
      }
      return promise;
    },
    consume(handler, o) {
      return calls.consume(async (items, redelivered) => {
        // A call whose submitter already gave up (timeout -> 503) or went away is skipped: nobody was
        // answered, so the caller sends it again.
        for (const it of items) if (!it.waiter.settled && it.waiter.abandoned?.()) it.waiter.reject(new StreamUnavailableError('the caller went away'));
        const live = items.filter((it) => !it.waiter.settled);
        if (live.length < items.length) opts.drops?.add('abandoned_calls', items.length - live.length);
        if (live.length === 0) return;
        const flags = live.length === items.length ? redelivered : items.flatMap((it, i) => (it.waiter.settled ? [] : [redelivered[i]!]));
        const got = await handler(live.map((it) => it.value), { redelivered: flags });
        const out = got && resultsOf(got);
        if (!out || !Array.isArray(out.results) || out.results.length !== live.length) {
          throw new Error(`ingest handler returned ${Array.isArray(out?.results) ? out.results.length : 'no'} results for ${live.length} calls`);
        }
        const { results } = out;
        // The answers go out on the next turn: the queue first hands the next batch to the handler,
        // so Postgres works on it while this thread writes these answers.
        setImmediate(() => {
          for (let i = 0; i < live.length; i++) if (results[i] !== undefined) deliver(live[i]!.waiter, live[i]!.index, results[i]!);
        });
        // Calls handed back go to the queue again (by their index in `items`).
        if (out.later.length === 0) return;
        const back = new Set(out.later.map((k) => live[k]!));
        return { later: items.flatMap((it, i) => (back.has(it) ? [i] : [])), delayMs: HAND_BACK_MS };
      }, o?.maxBatch ?? DEFAULT_MAX_BATCH, o?.maxInFlight ?? 1);
    },
    healthy: () => !ingestClosed,
    redelivers: false,
    lag: async () => calls.lag(),
    async close() {
      if (ingestClosed) return;
      ingestClosed = true;
      await calls.close();
      for (const w of [...submits]) w.reject(new StreamUnavailableError('the ingestion stream closed before the call was processed'));
    },
  };

  const queued = new WorkQueue<Item<EventRecord, true>>({ maxPending, log, retryDelayMs });
  const publishes = new Set<Waiter<true>>();
  let eventsClosed = false;

  const events: EventStream = {
    publish(batch) {
      if (batch.length === 0) return Promise.resolve();
      if (eventsClosed) return Promise.reject(new StreamUnavailableError('the event stream is closed'));
      // No timeout: resolves once the events are written. (The engine does not wait for it before
      // answering: in embedded mode answered events can be recovered from Postgres, see landing.ts.)
      const { waiter, promise } = createWaiter<true>(batch.length, publishes);
      if (!queued.push(batch.map((value, index) => ({ value, waiter, index })))) {
        waiter.reject(new StreamUnavailableError('the event queue is full'));
      }
      return promise.then(() => undefined);
    },
    consume(handler, o) {
      return queued.consume(async (items) => {
        await handler(items.map((it) => it.value));
        for (const it of items) deliver(it.waiter, it.index, true);
      }, o?.maxBatch ?? DEFAULT_MAX_BATCH, o?.maxInFlight ?? 1, o?.lingerMs ?? 0);
    },
    lag: async () => queued.lag(),
    async close() {
      if (eventsClosed) return;
      eventsClosed = true;
      await queued.close();
      for (const w of [...publishes]) w.reject(new StreamUnavailableError('the event stream closed before the events were written'));
    },
  };

  return { ingest, events };
}
