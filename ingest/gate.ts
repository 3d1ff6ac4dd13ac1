// Admission to the ingestion stream for the HTTP write routes: when the workers fall behind, new
// requests are answered 503 `dependency_unavailable` with `Retry-After` at once instead of
// joining a queue that makes every answer slow. Behind means the oldest call still waiting for its
// result has waited longer than `maxWaitMs`, or more than `maxCalls` calls are waiting. Without it
// a server past its capacity answers in seconds, clients time out and send again while their
// first calls are still processed, and the work per answered call grows with the backlog.
// SDKs retry a 503 after Retry-After; nothing of a refused request was accepted.
import { HttpError } from '../api/http/errors.js';
import type { CallResult, IngestCall } from '../pipeline/types.js';
import type { SubmitOptions } from '../pipeline/stream/mod.js';

export interface Submitter { submit(calls: IngestCall[], o?: SubmitOptions): Promise<CallResult[]> }

export interface GateOptions {
  /** Refuse while the oldest waiting call has waited longer than this; default 1,000 ms. */
  maxWaitMs?: number;
  /** Refuse when more calls than this would be waiting; default 20,000. */
  maxCalls?: number;
  /** Seconds a refused client is told to wait; default 1. */
  retryAfterS?: number;
  /** Told of every answered submit (calls and their results) and of refused ones (results undefined). */
  observe?: (calls: IngestCall[], results: CallResult[] | undefined) => void;
}

interface Open { at: number; n: number }

export class IngestGate implements Submitter {
  private readonly maxWaitMs: number;
  private readonly maxCalls: number;
  private readonly retryAfter: string;
  /** Submits waiting for results, oldest first (a Set keeps insertion order). */
  private readonly open = new Set<Open>();
  private waiting = 0;
  private readonly observe?: GateOptions['observe'];

  constructor(private readonly stream: Submitter, o: GateOptions = {}) {
    this.observe = o.observe;
    this.maxWaitMs = o.maxWaitMs ?? 1_000;
    this.maxCalls = o.maxCalls ?? 20_000;
    this.retryAfter = String(o.retryAfterS ?? 1);
  }

  /** Calls waiting for their results, and how long the oldest has waited (ms). */
  backlog(now = Date.now()): { calls: number; oldestMs: number } {
    const first = this.open.values().next();
    return { calls: this.waiting, oldestMs: first.done ? 0 : now - first.value.at };
  }

  submit(calls: IngestCall[], o?: SubmitOptions): Promise<CallResult[]> {
    const now = Date.now();
    const b = this.backlog(now);
    if (b.oldestMs > this.maxWaitMs || (this.waiting > 0 && b.calls + calls.length > this.maxCalls)) {
      this.observe?.(calls, undefined);
      return Promise.reject(new HttpError('dependency_unavailable',
        `ingestion is behind (${b.calls} calls waiting, the oldest for ${b.oldestMs} ms); nothing was accepted, retry after ${this.retryAfter} s`,
        { 'retry-after': this.retryAfter }));
    }
    const entry: Open = { at: now, n: calls.length };
    this.open.add(entry);
    this.waiting += calls.length;
    const done = () => { this.open.delete(entry); this.waiting -= entry.n; };
    const p = this.stream.submit(calls, o);
    p.then((results) => { done(); this.observe?.(calls, results); }, done);
    return p;
  }
}
