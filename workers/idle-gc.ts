// Gives a worker thread's memory back once it goes quiet after a burst. A busy isolate grows its
// young generation to the maximum (~34 MB here) and keeps it; V8 shrinks it again only in a full GC,
// and a thread whose burst needed scavenges alone never runs one while it idles. Measured with
// 10,000 executions seeded on PostgreSQL + NATS: the four ingestion and journey threads kept
// ~150 MB of heap, nearly all garbage, until one full GC each returned it (docs/journeys-runtime.md).
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleGcOptions {
  /** How long the thread must have run no task; default 5 s. */
  quietMs?: number;
  /** Heap growth since the last collection that makes one worth it; default 8 MB. */
  minGrowthBytes?: number;
}

/**
 * The engine's `gc()`, from a fresh context (contexts made while the flag is on get it). The flag is
 * process-wide and never turned off again: threads collecting at once would otherwise race, one
 * turning it off before the other's context exists. Contexts made later (worker threads, vm) see a
 * `gc` global; headwater runs no user code in V8 contexts (journeys run in QuickJS).
 */
function collector(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('typeof gc === "function" ? gc : null') as (() => void) | null;
    return gc;
  } catch {
    return null;
  }
}

/**
 * Counts the thread's running tasks; when none has run for `quietMs` and the heap grew by more than
 * `minGrowthBytes` since the last collection, runs a full GC (two at most per quiet spell). The timer
 * never keeps the thread up; the pool must let an idle thread run its event loop (Piscina `atomics:
 * 'async'`, as its default blocks the thread in Atomics.wait between tasks).
 */
export class IdleGc {
  private active = 0;
  private timer: NodeJS.Timeout | undefined;
  private floor = getHeapStatistics().total_heap_size;
  private gc: (() => void) | null | undefined;
  private readonly quietMs: number;
  private readonly minGrowth: number;
  /** Collections run, for tests and metrics. */
  collections = 0;

  constructor(o: IdleGcOptions = {}) {
    this.quietMs = o.quietMs ?? 5_000;
    this.minGrowth = o.minGrowthBytes ?? 8 * 1024 * 1024;
  }

  begin(): void {
    this.active++;
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
  }

  end(): void {
    if (--this.active > 0) return;
    this.active = 0;
    this.arm(1);
  }

  /** Runs `task` between begin() and end(). */
  async around<T>(task: () => Promise<T>): Promise<T> {
    this.begin();
    try { return await task(); } finally { this.end(); }
  }

  private arm(attempt: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.collect(attempt), this.quietMs);
    this.timer.unref();
  }

  /**
   * V8 shrinks the young generation in a full GC only when the allocation rate it measured since the
   * previous GC is low but not zero. The first quiet collection still counts the burst's allocations
   * (its last GC ran during the burst), so a second one after another quiet spell is what shrinks.
   */
  private collect(attempt: number): void {
    this.timer = undefined;
    if (this.active > 0 || getHeapStatistics().total_heap_size - this.floor < this.minGrowth) return;
    if (this.gc === undefined) this.gc = collector();
    // Without a collector (an engine that refuses the flag) the thread keeps its memory, as before.
    if (!this.gc) return;
    this.gc();
    this.collections++;
    const total = getHeapStatistics().total_heap_size;
    if (attempt === 1 && total - this.floor >= this.minGrowth) this.arm(2);
    else this.floor = total;
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
