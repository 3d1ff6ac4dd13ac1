// Piscina task module for test/idle-gc.test.ts: a burst of short-lived garbage, and the collect task
// the ingestion and journey task modules answer. Each collection is reported over a BroadcastChannel
// (the thread is blocked between tasks, so it can report only while it runs one).
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import { HeapCollector } from '../../workers/idle-gc.js';
import { isCollectTask, type CollectAnswer, type CollectTask } from '../../pipeline/quiet-collect.js';

export interface CollectReport { threadId: number; answer: CollectAnswer; before: number; after: number; collections: number }

const heap = new HeapCollector();
const channel = new BroadcastChannel('idle-gc-test');
channel.unref();
const total = () => getHeapStatistics().total_heap_size;

export default function run(task: number | 'stats' | CollectTask): unknown {
  if (isCollectTask(task)) {
    const before = total();
    const answer = heap.collect(task.collect.last);
    channel.postMessage({ threadId, answer, before, after: total(), collections: heap.collections } satisfies CollectReport);
    return answer;
  }
  if (task === 'stats') return { total: total(), collections: heap.collections };
  let keep: { i: number; s: string }[] = [];
  let sum = 0;
  for (let i = 0; i < task; i++) {
    keep.push({ i, s: `x${i}` });
    if (keep.length > 1000) { sum += keep.length; keep = []; }
  }
  return sum;
}
