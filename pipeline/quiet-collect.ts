// Asks a Piscina pool's threads to give a burst's memory back once the pool has run nothing for a
// while (workers/idle-gc.ts says why a thread cannot do it by itself). The pool keeps Piscina's
// default Atomics.wait between tasks: letting idle threads run their event loop instead (`atomics:
// 'async'`) cost the ingestion path 3-16 % of its calls/s in alternating runs.

/** A thread's answer to a collect task. */
export type CollectAnswer = 'collected' | 'again' | 'skipped';

/** The task a thread receives; `last` is the second and final try of a quiet spell. */
export interface CollectTask { collect: { last: boolean } }

export const isCollectTask = (x: unknown): x is CollectTask =>
  typeof x === 'object' && x !== null && 'collect' in x;

export interface QuietCollectorOptions {
  /** Sends one task to the pool (its `run`). */
  run(task: CollectTask): Promise<unknown>;
  /** Threads of the pool; each runs one task at a time, so as many tasks reach every idle thread once. */
  threads: number;
  /** How long the pool must have run nothing; default 5 s. */
  quietMs?: number;
}

/** Counts a pool's tasks in flight; 5 s after the last one ends, sends each thread a collect task. */
export class QuietCollector {
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly quietMs: number;

  constructor(private readonly o: QuietCollectorOptions) {
    this.quietMs = o.quietMs ?? 5_000;
  }

  /** Runs `task` as one of the pool's tasks in flight. */
  async around<T>(task: () => Promise<T>): Promise<T> {
    this.running++;
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    try { return await task(); } finally { if (--this.running === 0) this.arm(false); }
  }

  private arm(last: boolean): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.collect(last), this.quietMs);
    this.timer.unref();
  }

  private async collect(last: boolean): Promise<void> {
    this.timer = undefined;
    if (this.running > 0 || this.closed) return;
    const task: CollectTask = { collect: { last } };
    const answers = await Promise.all(Array.from({ length: this.o.threads }, () => this.o.run(task).catch(() => 'skipped')));
    if (!last && this.running === 0 && !this.timer && answers.includes('again')) this.arm(true);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
