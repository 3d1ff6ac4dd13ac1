// Gives a worker thread's memory back once its pool has gone quiet after a burst. A busy isolate
// grows its young generation to the maximum (~34 MB here) and keeps it; V8 shrinks it again only in
// a full GC run at a low (non-zero) allocation rate, and a thread whose burst needed scavenges alone
// never runs one while it idles: Piscina blocks an idle thread in Atomics.wait, so nothing in it runs
// until the next task. The process sends that task (pipeline/quiet-collect.ts). Measured with 10,000
// executions seeded on PostgreSQL + NATS: the two ingestion and two journey threads kept ~150 MB of
// heap, nearly all garbage, until one full GC each returned it (docs/journeys-runtime.md).
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { CollectAnswer } from '../pipeline/quiet-collect.js';

/**
 * The engine's `gc()`, from a fresh context (contexts made while the flag is on get it). The flag is
 * process-wide and never turned off again: threads collecting at once would otherwise race, one
 * turning it off before the other's context exists. Contexts made later (worker threads, vm) see a
 * `gc` global; headwater runs no user code in V8 contexts (journeys run in QuickJS).
 */
function collector(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('typeof gc === "function" ? gc : null') as (() => void) | null;
  } catch {
    return null;
  }
}

/** One thread's collections: a full GC when the heap grew by more than `minGrowthBytes` since the last. */
export class HeapCollector {
  private floor = getHeapStatistics().total_heap_size;
  private gc: (() => void) | null | undefined;
  /** Collections run, for tests. */
  collections = 0;

  constructor(private readonly minGrowthBytes = 8 * 1024 * 1024) {}

  /**
   * 'again' when the heap is still large after the GC: that GC still counted the burst's allocations
   * in V8's allocation rate, and one after another quiet spell is the one that shrinks. `last`
   * accepts what is left as the new floor.
   */
  collect(last: boolean): CollectAnswer {
    if (getHeapStatistics().total_heap_size - this.floor < this.minGrowthBytes) return 'skipped';
    if (this.gc === undefined) this.gc = collector();
    // Without a collector (an engine that refuses the flag) the thread keeps its memory, as before.
    if (!this.gc) return 'skipped';
    this.gc();
    this.collections++;
    const total = getHeapStatistics().total_heap_size;
    if (!last && total - this.floor >= this.minGrowthBytes) return 'again';
    this.floor = total;
    return 'collected';
  }
}
