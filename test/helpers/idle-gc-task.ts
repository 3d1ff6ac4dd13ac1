// Piscina task module for test/idle-gc.test.ts: a burst of short-lived garbage under IdleGc, as the
// ingestion and journey task modules run theirs. The thread reports its heap over a BroadcastChannel
// (a task would count as work and restart the quiet spell).
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import { IdleGc } from '../../workers/idle-gc.js';

const idle = new IdleGc();
const channel = new BroadcastChannel('idle-gc-test');
const report = setInterval(() => channel.postMessage({ threadId, total: getHeapStatistics().total_heap_size, collections: idle.collections }), 250);
report.unref();

export default function run(n: number): Promise<number> {
  return idle.around(async () => {
    let keep: { i: number; s: string }[] = [];
    let sum = 0;
    for (let i = 0; i < n; i++) {
      keep.push({ i, s: `x${i}` });
      if (keep.length > 1000) { sum += keep.length; keep = []; }
    }
    return sum + getHeapStatistics().total_heap_size * 0;
  });
}
