// A bounded in-memory work queue with competing consumers: the in-process stand-in for a
// JetStream work-queue stream read through one shared durable consumer. Batches go out as soon as
// items arrive (setImmediate coalesces the pushes of one event-loop turn), or, for a consumer with
// a linger, once maxBatch items wait or the oldest waited `lingerMs` (fewer, larger batches).
import type { Logger } from '../../lib/log.js';

interface Delivery<T> { item: T; redelivered: boolean; attempts: number; /** When it was pushed (ms). */ at: number }

/** Items of a batch (by index) the handler did not process now: offered again after `delayMs`. */
export interface HandBack { later: number[]; delayMs: number }

interface QueueConsumer<T> {
  handler: (items: T[], redelivered: boolean[]) => Promise<void | HandBack>;
  maxBatch: number;
  maxInFlight: number;
  lingerMs: number;
  inFlight: number;
  running: Set<Promise<void>>;
}

export interface WorkQueueOptions {
  maxPending: number;
  log: Logger;
  /** Delay before a failed batch is offered again, by attempt number (1 = first failure). */
  retryDelayMs: (attempts: number) => number;
}

export class WorkQueue<T> {
  private queue: Delivery<T>[] = [];
  private head = 0;
  /** Failed deliveries, offered before new ones once their delay passed. */
  private retry: Delivery<T>[] = [];
  /** Queued + waiting for retry + in flight: what maxPending bounds. */
  private pending = 0;
  private consumers = new Set<QueueConsumer<T>>();
  private scheduled = false;
  private closed = false;
  private retryTimers = new Set<NodeJS.Timeout>();
  private lingerTimer: NodeJS.Timeout | undefined;
  private idle: Array<() => void> = [];

  constructor(private readonly opts: WorkQueueOptions) {}

  /** False when the queue is closed or would exceed maxPending (the caller answers 503). */
  push(items: T[]): boolean {
    if (this.closed || this.pending + items.length > this.opts.maxPending) return false;
    const at = Date.now();
    for (const item of items) this.queue.push({ item, redelivered: false, attempts: 0, at });
    this.pending += items.length;
    if (!this.scheduled) { this.scheduled = true; setImmediate(() => { this.scheduled = false; this.drain(); }); }
    return true;
  }

  /** Items queued or in flight, and how long the oldest queued one has waited (ms). */
  lag(now = Date.now()): { pending: number; oldestMs: number } {
    let oldest = this.head < this.queue.length ? this.queue[this.head]!.at : now;
    for (const d of this.retry) if (d.at < oldest) oldest = d.at;
    return { pending: this.pending, oldestMs: now - oldest };
  }

  consume(handler: QueueConsumer<T>['handler'], maxBatch: number, maxInFlight: number, lingerMs = 0): { close(): Promise<void> } {
    const c: QueueConsumer<T> = { handler, maxBatch: Math.max(1, maxBatch), maxInFlight: Math.max(1, maxInFlight), lingerMs: Math.max(0, lingerMs), inFlight: 0, running: new Set() };
    this.consumers.add(c);
    setImmediate(() => this.drain());
    return {
      close: async () => {
        // Stop taking batches; what is queued stays for the other (or a later) consumer.
        this.consumers.delete(c);
        await Promise.all([...c.running]);
        this.notifyIdle();
      },
    };
  }

  /**
   * Refuses new items, lets the consumers finish what is queued (up to `graceMs`), and returns the
   * items nobody processed so the caller can fail their waiters.
   */
  async close(graceMs = 10_000): Promise<T[]> {
    this.closed = true;
    this.drain(); // lingering batches go now
    if (this.pending > 0 && this.consumers.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((r) => this.idle.push(r)),
        new Promise<void>((r) => { timer = setTimeout(r, graceMs); }),
      ]);
      clearTimeout(timer);
    }
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    clearTimeout(this.lingerTimer);
    const left = [...this.retry, ...this.queue.slice(this.head)].map((d) => d.item);
    this.retry = []; this.queue = []; this.head = 0;
    return left;
  }

  private notifyIdle() {
    if (this.pending > 0 && this.consumers.size > 0) return;
    for (const r of this.idle.splice(0)) r();
  }

  private take(max: number): Delivery<T>[] {
    const batch = this.retry.length ? this.retry.splice(0, max) : [];
    const n = Math.min(max - batch.length, this.queue.length - this.head);
    for (let i = 0; i < n; i++) batch.push(this.queue[this.head++]!);
    // Compact now and then so the consumed prefix does not pin memory.
    if (this.head > 4096 && this.head * 2 > this.queue.length) { this.queue = this.queue.slice(this.head); this.head = 0; }
    return batch;
  }

  private drain() {
    for (const c of this.consumers) {
      while (c.inFlight < c.maxInFlight && (this.retry.length || this.head < this.queue.length)) {
        const wait = this.lingerLeft(c);
        if (wait > 0) { this.lingerTimer ??= setTimeout(() => { this.lingerTimer = undefined; this.drain(); }, wait); break; }
        this.run(c, this.take(c.maxBatch));
      }
    }
  }

  /** How long a lingering consumer still waits before taking a partial batch (0: take now). */
  private lingerLeft(c: QueueConsumer<T>): number {
    // Closing, retries and full batches never wait.
    if (c.lingerMs === 0 || this.closed || this.retry.length || this.queue.length - this.head >= c.maxBatch) return 0;
    return this.queue[this.head]!.at + c.lingerMs - Date.now();
  }

  private run(c: QueueConsumer<T>, batch: Delivery<T>[]) {
    c.inFlight++;
    const p = this.handle(c, batch).finally(() => {
      c.inFlight--;
      c.running.delete(p);
      this.notifyIdle();
      if (this.consumers.has(c)) this.drain();
    });
    c.running.add(p);
  }

  private async handle(c: QueueConsumer<T>, batch: Delivery<T>[]) {
    try {
      const back = await c.handler(batch.map((d) => d.item), batch.map((d) => d.redelivered));
      if (back && back.later.length) {
        this.pending -= batch.length - back.later.length;
        // Not a failure: no attempt is counted and the items are not marked redelivered.
        this.offerLater(back.later.map((i) => batch[i]!), back.delayMs);
        return;
      }
      this.pending -= batch.length;
    } catch (err) {
      this.opts.log.warn('in-process batch failed; offering it again', { err, size: batch.length, attempts: batch[0]!.attempts + 1 });
      this.retryLater(batch);
    }
  }

  private retryLater(batch: Delivery<T>[]) {
    for (const d of batch) { d.attempts++; d.redelivered = true; }
    this.offerLater(batch, this.opts.retryDelayMs(batch[0]!.attempts));
  }

  private offerLater(batch: Delivery<T>[], delayMs: number) {
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.retry.push(...batch);
      this.drain();
    }, delayMs);
    this.retryTimers.add(timer);
  }
}
