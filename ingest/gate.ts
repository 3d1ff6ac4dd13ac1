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
// Each org is judged on its own calls: an org whose calls wait for a change of its own (a segment
// change holds them, pipeline/busy-orgs.ts) is refused without refusing the others; when the
// workers are behind for everyone, every org's calls wait and every org is refused. An org's state
// lives while it has calls waiting.
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

/** One org's calls waiting, and the judgement of its intervals. */
class OrgGate {
  /** Submits waiting for results, oldest first (a Set keeps insertion order). */
  readonly open = new Set<Open>();
  waiting = 0;
  /** The current interval: when it began, and the shortest wait of the submits answered in it. */
  windowStart: number;
  windowMin = Infinity;
  /** The verdict of the last closed interval. */
  behind = false;
  /** Nothing was answered in the last interval: one request may still go through to measure. */
  probe = false;
  constructor(now: number) { this.windowStart = now; }

  oldestMs(now: number): number {
    const first = this.open.values().next();
    return first.done ? 0 : now - first.value.at;
  }

  /** Closes the interval when it is over: behind when even its quickest answer waited too long. */
  judge(now: number, maxWaitMs: number): boolean {
    const elapsed = now - this.windowStart;
    if (elapsed >= maxWaitMs) {
      // An interval left open for long (no requests) says nothing about now.
      const measured = this.windowMin !== Infinity && elapsed < 2 * maxWaitMs;
      this.behind = measured ? this.windowMin > maxWaitMs : this.waiting > 0 && this.oldestMs(now) > maxWaitMs;
      this.probe = !measured && this.behind;
      this.windowStart = now;
      this.windowMin = Infinity;
    }
    if (this.behind && this.probe) { this.probe = false; return false; }
    return this.behind;
  }
}

export class IngestGate implements Submitter {
  private readonly maxWaitMs: number;
  private readonly maxCalls: number;
  private readonly retryAfter: string;
  /** Every org's submits waiting, oldest first (for the backlog). */
  private readonly open = new Set<Open>();
  private waiting = 0;
  private readonly orgs = new Map<string, OrgGate>();
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
    // The calls of one request are one org's (its key's).
    const orgId = calls[0]?.orgId ?? '';
    let org = this.orgs.get(orgId);
    // Behind, and a queue of this org stands now: a slow interval that has drained since (a cold
    // start, one slow batch) refuses nobody.
    const queued = org !== undefined && org.waiting > 0 && org.oldestMs(now) > this.maxWaitMs;
    if ((org !== undefined && org.judge(now, this.maxWaitMs) && queued) || (this.waiting > 0 && this.waiting + calls.length > this.maxCalls)) {
      const b = org ? { calls: org.waiting, oldestMs: org.oldestMs(now) } : this.backlog(now);
      this.observe?.(calls, undefined);
      return Promise.reject(new HttpError('dependency_unavailable',
        `ingestion is behind (${b.calls} calls waiting, the oldest for ${b.oldestMs} ms); nothing was accepted, retry after ${this.retryAfter} s`,
        { 'retry-after': this.retryAfter }));
    }
    if (!org) this.orgs.set(orgId, (org = new OrgGate(now)));
    const entry: Open = { at: now, n: calls.length };
    const gate = org;
    gate.open.add(entry);
    gate.waiting += calls.length;
    this.open.add(entry);
    this.waiting += calls.length;
    const done = () => {
      this.open.delete(entry);
      this.waiting -= entry.n;
      gate.open.delete(entry);
      gate.waiting -= entry.n;
      const waited = Date.now() - entry.at;
      if (waited < gate.windowMin) gate.windowMin = waited;
      // Nothing of the org waits: its judgement would refuse nobody (see `queued`); a new state
      // starts with its next request.
      if (gate.waiting === 0 && this.orgs.get(orgId) === gate) this.orgs.delete(orgId);
    };
    const p = this.stream.submit(calls, o);
    p.then((results) => { done(); this.observe?.(calls, results); }, done);
    return p;
  }
}
