// A worker thread gives a burst's memory back once it goes quiet (workers/idle-gc.ts), in a Piscina
// pool set up as the ingestion and journey pools are (`atomics: 'async'`).
import t from 'tap';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';

t.test('an idle thread returns the heap its burst grew', async (t) => {
  const pool = new Piscina({ filename: new URL('./helpers/idle-gc-task.js', import.meta.url).href, minThreads: 1, maxThreads: 1, atomics: 'async' });
  const channel = new BroadcastChannel('idle-gc-test');
  const reports: { total: number; collections: number }[] = [];
  channel.onmessage = (m: unknown) => { reports.push((m as { data: { total: number; collections: number } }).data); };
  t.teardown(async () => { channel.close(); await pool.destroy(); });

  await pool.run(3_000_000);
  reports.length = 0;
  const wait = async (done: (r: { total: number; collections: number }) => boolean, ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const last = reports[reports.length - 1];
      if (last && done(last)) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    return reports[reports.length - 1];
  };
  const grown = await wait(() => true, 2_000);
  t.ok(grown, 'the thread reports its heap');
  t.equal(grown!.collections, 0, 'no collection while the quiet spell has not passed');
  t.ok(grown!.total > 24 * 1024 * 1024, `the burst grew the heap (${(grown!.total / 1e6).toFixed(1)} MB)`);

  const after = await wait((r) => r.collections > 0 && r.total < grown!.total - 16 * 1024 * 1024, 20_000);
  t.ok(after!.collections >= 1 && after!.collections <= 2, `one or two collections (${after!.collections})`);
  t.ok(after!.total < grown!.total - 16 * 1024 * 1024, `heap ${(grown!.total / 1e6).toFixed(1)} -> ${(after!.total / 1e6).toFixed(1)} MB`);

  // Quiet again without new work: nothing more is collected.
  const n = after!.collections;
  await pool.run(1);
  const later = await wait((r) => r.collections > n, 7_000);
  t.equal(later!.collections, n, 'a quiet spell without heap growth runs no collection');
});

t.test('threads that go quiet together each collect, and none fails', async (t) => {
  // Two threads' first collections run at the same moment: the collector they share must not race.
  const pool = new Piscina({ filename: new URL('./helpers/idle-gc-task.js', import.meta.url).href, minThreads: 2, maxThreads: 2, atomics: 'async' });
  const errors: unknown[] = [];
  pool.on('error', (e) => errors.push(e));
  const channel = new BroadcastChannel('idle-gc-test');
  const last = new Map<number, { total: number; collections: number }>();
  channel.onmessage = (m: unknown) => { const d = (m as { data: { threadId: number; total: number; collections: number } }).data; last.set(d.threadId, d); };
  t.teardown(async () => { channel.close(); await pool.destroy(); });
  await Promise.all([pool.run(3_000_000), pool.run(3_000_000)]);
  const until = Date.now() + 20_000;
  while (Date.now() < until && !(last.size === 2 && [...last.values()].every((r) => r.collections > 0))) await new Promise((r) => setTimeout(r, 100));
  t.equal(last.size, 2, 'both threads report');
  t.ok([...last.values()].every((r) => r.collections > 0), `both collected (${[...last.values()].map((r) => r.collections).join(', ')})`);
  t.same(errors, [], 'no thread failed');
  t.equal(pool.threads.length, 2, 'both threads still run');
});
