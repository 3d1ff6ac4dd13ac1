// A pool's threads give a burst's memory back once the pool has run nothing for 5 s
// (pipeline/quiet-collect.ts sends the collect tasks, workers/idle-gc.ts runs them), in Piscina
// pools set up as the ingestion and journey pools are (default atomics: idle threads are blocked).
import t, { type Test } from 'tap';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { QuietCollector } from '../pipeline/quiet-collect.js';
import type { CollectReport } from './helpers/idle-gc-task.js';
import { poll } from './helpers/server.js';

const TASK = new URL('./helpers/idle-gc-task.js', import.meta.url).href;

function listen(t: Test): CollectReport[] {
  const reports: CollectReport[] = [];
  const channel = new BroadcastChannel('idle-gc-test');
  channel.onmessage = (m: unknown) => { reports.push((m as { data: CollectReport }).data); };
  t.teardown(() => channel.close());
  return reports;
}

/** Waits until `done()` holds (or `ms` passed): the reports arrive on the channel meanwhile. */
const until = (done: () => boolean, ms: number) => poll(async () => done(), (v) => v, ms);

t.test('a quiet pool\'s thread returns the heap its burst grew', async (t) => {
  const pool = new Piscina({ filename: TASK, minThreads: 1, maxThreads: 1 });
  const quiet = new QuietCollector({ run: (task) => pool.run(task), threads: 1 });
  const reports = listen(t);
  t.teardown(async () => { quiet.close(); await pool.destroy(); });

  await quiet.around(() => pool.run(3_000_000));
  const grown = await pool.run('stats') as { total: number; collections: number };
  t.equal(grown.collections, 0, 'no collection before the pool has been quiet for 5 s');
  t.ok(grown.total > 24 * 1024 * 1024, `the burst grew the heap (${(grown.total / 1e6).toFixed(1)} MB)`);

  await until(() => reports.some((r) => r.answer === 'collected'), 20_000);
  const last = reports[reports.length - 1];
  t.ok(last && last.answer === 'collected', `collected (answers: ${reports.map((r) => r.answer).join(', ')})`);
  t.ok(reports.length <= 2, 'at most two collect tasks per quiet spell');
  t.ok(last!.after < grown.total - 16 * 1024 * 1024, `heap ${(grown.total / 1e6).toFixed(1)} -> ${(last!.after / 1e6).toFixed(1)} MB`);

  // Quiet again after work that grew nothing: the thread is asked, and skips.
  const n = reports.length;
  await quiet.around(() => pool.run(1));
  await until(() => reports.length > n, 10_000);
  t.same(reports.slice(n).map((r) => r.answer), ['skipped'], 'a quiet spell without heap growth runs no collection');
  t.equal((await pool.run('stats') as { collections: number }).collections, last!.collections, 'no further collection');
});

t.test('work during the quiet spell puts the collection off', async (t) => {
  const pool = new Piscina({ filename: TASK, minThreads: 1, maxThreads: 1 });
  const quiet = new QuietCollector({ run: (task) => pool.run(task), threads: 1, quietMs: 1_000 });
  const reports = listen(t);
  t.teardown(async () => { quiet.close(); await pool.destroy(); });
  await quiet.around(() => pool.run(2_000_000));
  const started = Date.now();
  // A task every 300 ms for 2.4 s keeps the pool from being quiet for 1 s.
  for (let i = 0; i < 8; i++) { await quiet.around(() => pool.run(1_000)); await new Promise((r) => setTimeout(r, 300)); }
  t.same(reports, [], 'no collection while work keeps coming');
  await until(() => reports.length > 0, 10_000);
  t.ok(reports.length > 0 && Date.now() - started >= 2_400, 'collected once the work stopped');
});

t.test('every thread of a quiet pool collects, at the same moment, and none fails', async (t) => {
  // The threads collect at once: the collector they share (the --expose-gc flag) must not race.
  const pool = new Piscina({ filename: TASK, minThreads: 2, maxThreads: 2 });
  const quiet = new QuietCollector({ run: (task) => pool.run(task), threads: 2 });
  const errors: unknown[] = [];
  pool.on('error', (e) => errors.push(e));
  const reports = listen(t);
  t.teardown(async () => { quiet.close(); await pool.destroy(); });
  await Promise.all([quiet.around(() => pool.run(3_000_000)), quiet.around(() => pool.run(3_000_000))]);
  await until(() => new Set(reports.filter((r) => r.collections > 0).map((r) => r.threadId)).size === 2, 20_000);
  t.equal(new Set(reports.filter((r) => r.collections > 0).map((r) => r.threadId)).size, 2, `both threads collected (${reports.map((r) => `${r.threadId}:${r.answer}`).join(', ')})`);
  t.same(errors, [], 'no thread failed');
  t.equal(pool.threads.length, 2, 'both threads still run');
});
