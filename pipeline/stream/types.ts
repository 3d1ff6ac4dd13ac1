// The two streams of the ingestion pipeline, with one interface for JetStream and in-process.
import type { CallResult, EventRecord, IngestCall } from '../types.js';

export interface ConsumeOptions {
  /** Most calls (or events) handed to the handler at once; default 500. */
  maxBatch?: number;
  /** Batches of this consumer running at once (backpressure stays in the stream); default 1 in-process, 2 on JetStream. */
  maxInFlight?: number;
  /**
   * How long a partial batch waits to fill before it goes (JetStream default 1 ms; in-process
   * default 0: what is queued goes at once).
   */
  lingerMs?: number;
}

export interface Consumer { close(): Promise<void> }

export interface IngestBatchInfo {
  redelivered: boolean[];
  /**
   * Offered where the calls stay in a durable stream until the batch is acknowledged (JetStream):
   * sends the results now, before the handler's remaining work (handing events over), which the
   * acknowledgement still waits for. A batch that fails after it comes again, and its redelivered
   * calls re-emit their original events. The handler still returns the same results.
   */
  answer?(results: Array<CallResult | undefined>): void;
  /**
   * Offered with `answer`: the batch is acknowledged only once `work` resolves (and comes again if
   * it rejects), but the consumer takes its next batch meanwhile. For work that waits to be
   * grouped with other batches' (pipeline/direct-landing.ts).
   */
  defer?(work: Promise<void>): void;
}

/**
 * What an ingest handler returns: one result per call, in order; or, where it left some calls
 * unprocessed (their org is busy: pipeline/busy-orgs.ts), those calls' indexes in `later` and no
 * result for them. The stream offers them again after `HAND_BACK_MS`, as new deliveries; on
 * JetStream the whole message of such a call comes again (a message holds one org's calls).
 */
export type IngestResults = CallResult[] | { results: Array<CallResult | undefined>; later: number[] };

/** How long calls handed back (`IngestResults.later`) wait before they are offered again. */
export const HAND_BACK_MS = 250;

/** The results of `IngestResults`, one per call (absent for those handed back), and the calls handed back. */
export function resultsOf(r: IngestResults): { results: Array<CallResult | undefined>; later: number[] } {
  return Array.isArray(r) ? { results: r, later: [] } : r;
}

export type IngestHandler = (calls: IngestCall[], info: IngestBatchInfo) => Promise<IngestResults>;
export type EventHandler = (events: EventRecord[]) => Promise<void>;

export interface SubmitOptions {
  /**
   * True once nobody waits for the results any more (the HTTP client went away). In-process,
   * calls not yet taken by a worker are then skipped and their submit rejects; on JetStream they
   * are published at once and processed anyway.
   */
  abandoned?: () => boolean;
}

/** What waits in a stream: messages not yet acknowledged, and the age of the oldest (ms). */
export interface StreamLag { pending: number; oldestMs: number }

export interface IngestStream {
  /**
   * Durably publishes the calls and resolves with one CallResult per call, in order, once a worker
   * processed them. Rejects with StreamUnavailableError when the stream cannot durably accept them
   * or no result arrives within `resultTimeoutMs` (default 30 s).
   */
  submit(calls: IngestCall[], o?: SubmitOptions): Promise<CallResult[]>;
  /**
   * Worker side: a long-lived consumer handing bounded batches to `handler`, which returns one
   * CallResult per call. Results go back to the submitter, then the batch is acknowledged; when the
   * handler throws, nothing is acknowledged and the calls come again later with `redelivered` true.
   */
  consume(handler: IngestHandler, opts?: ConsumeOptions): Consumer;
  /** False when the underlying connection is down. */
  healthy(): boolean;
  /** Calls waiting in the stream (for metrics). */
  lag(): Promise<StreamLag>;
  /**
   * Calls not acknowledged come again after a crash (JetStream), so a handler may defer its
   * acknowledgement (`IngestBatchInfo.defer`); in-process, a crash loses them with the process.
   */
  readonly redelivers: boolean;
  close(): Promise<void>;
}

export interface EventStream {
  /** Durably hands events over (JetStream: Nats-Msg-Id = event id; in-process: resolves once written). */
  publish(events: EventRecord[]): Promise<void>;
  /** Acknowledges only after `handler` resolved; when it throws, the events come again after a backoff. */
  consume(handler: EventHandler, opts?: ConsumeOptions): Consumer;
  /** Events waiting in the stream (for metrics). */
  lag(): Promise<StreamLag>;
  close(): Promise<void>;
}

export const DEFAULT_MAX_BATCH = 500;
export const DEFAULT_RESULT_TIMEOUT_MS = 30_000;
