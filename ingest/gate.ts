// Admission to the ingestion stream for the HTTP write routes: when the workers fall behind, new
// requests are answered 503 `dependency_unavailable` with `Retry-After` at once instead of
// joining a queue that makes every answer slow. Without it a server past its capacity answers in
// seconds, clients time out and send again while their first calls are still processed, and the
// work per answered call grows with the backlog. SDKs retry a 503 after Retry-After; nothing of a
// refused request was accepted.
// Behind is judged as CoDel does, on the shortest wait of the submits answered during the last
// interval (`maxWaitMs` long): when even the quickest waited longer than `maxWaitMs`, a standing
// queue has formed, and new requests are refused while a call has been waiting longer than
// `maxWaitMs` (the queue still stands). A straggler (a call held by a worker that died, answered after the stream's
// redelivery) does not shut the gate while others are answered quickly. With nothing answered in
// an interval, the oldest waiting call decides, and one request per interval is still let through
// to measure again (else a straggler alone would keep the gate shut). More than `maxCalls` waiting
// is always refused.
import { HttpError } from '../http/errors.js';
import type { CallResult, IngestCall } from '../pipeline/types.js';
import type { SubmitOptions } from '../pipeline/stream/mod.js';

export interface Submitter { submit(calls: IngestCall[], o?: SubmitOptions): Promise<CallResult[]> }

export interface GateOptions {
  /** Refuse while the quickest answer of the last interval (this long) waited longer than this; default 1,000 ms. */
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
  /** The current interval: when it began, and the shortest wait of the submits answered in it. */
  private windowStart = Date.now();
  private windowMin = Infinity;
  /** The verdict of the last closed interval. */
  private behind = false;
  /** Nothing was answered in the last interval: one request may still go through to measure. */
  private probe = false;
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

  /** Closes the interval when it is over: behind when even its quickest answer waited too long. */
  private judge(now: number, oldestMs: number): boolean {
    const elapsed = now - this.windowStart;
    if (elapsed >= this.maxWaitMs) {
      // An interval left open for long (no requests) says nothing about now.
      const measured = this.windowMin !== Infinity && elapsed < 2 * this.maxWaitMs;
      this.behind = measured ? this.windowMin > this.maxWaitMs : this.waiting > 0 && oldestMs > this.maxWaitMs;
      this.probe = !measured && this.behind;
      this.windowStart = now;
      this.windowMin = Infinity;
    }
    if (this.behind && this.probe) { this.probe = false; return false; }
    return this.behind;
  }

  submit(calls: IngestCall[], o?: SubmitOptions): Promise<CallResult[]> {
    const now = Date.now();
    const b = this.backlog(now);
    // Behind, and a queue stands now: a slow interval that has drained since (a cold start, one
    // slow batch) refuses nobody.
    const queued = this.waiting > 0 && b.oldestMs > this.maxWaitMs;
    if ((this.judge(now, b.oldestMs) && queued) || (this.waiting > 0 && b.calls + calls.length > this.maxCalls)) {
      this.observe?.(calls, undefined);
      return Promise.reject(new HttpError('dependency_unavailable',
        `ingestion is behind (${b.calls} calls waiting, the oldest for ${b.oldestMs} ms); nothing was accepted, retry after ${this.retryAfter} s`,
        { 'retry-after': this.retryAfter }));
    }
    const entry: Open = { at: now, n: calls.length };
    this.open.add(entry);
    this.waiting += calls.length;
    const done = () => {
      this.open.delete(entry);
      this.waiting -= entry.n;
      const waited = Date.now() - entry.at;
      if (waited < this.windowMin) this.windowMin = waited;
    };
    const p = this.stream.submit(calls, o);
    p.then((results) => { done(); this.observe?.(calls, results); }, done);
    return p;
  }
}
