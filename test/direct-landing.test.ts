// How a process lands its own batches' events (pipeline/direct-landing.ts): several batches in one
// insert up to its size, a lone batch after the linger, one insert at a time, a failed insert's
// batches handed to the event stream one by one (a batch that cannot be handed over fails alone),
// backpressure past maxPending, and close() landing what waits without the linger. The insert and
// the hand-over are scripted; the engine's real use is covered against ClickHouse (chDB) and NATS
// by test/worker-crash.test.ts (serve killed mid-stream) and the servers-mode suite.
import t from 'tap';
import { startDirectLanding } from '../pipeline/direct-landing.js';
import { createLogger } from '../lib/log.js';
import type { EventRecord } from '../pipeline/types.js';

const log = createLogger('silent');
const ev = (batch: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${batch}-${i}` }) as unknown as EventRecord);
const settled = (p: Promise<void>) => p.then(() => 'ok', (e: Error) => `failed: ${e.message}`);

t.test('batches share an insert up to maxBatch at once; the rest waits for the linger', async (t) => {
  const inserts: Array<[number, number]> = [];
  const t0 = Date.now();
  const d = startDirectLanding({ land: async (e) => { inserts.push([e.length, Date.now() - t0]); }, handOver: async () => {}, maxBatch: 10, lingerMs: 300, log });
  const all = [d.land(ev('a', 4)), d.land(ev('b', 4)), d.land(ev('c', 4))];
  t.same(await Promise.all(all.map(settled)), ['ok', 'ok', 'ok']);
  // 12 events reached maxBatch: the first two batches (8) go at once, the third after the linger.
  t.same(inserts.map(([n]) => n), [8, 4], 'whole batches, at most maxBatch events per insert');
  t.ok(inserts[0]![1] < 250, `a full insert goes at once (after ${inserts[0]![1]} ms)`);
  t.ok(inserts[1]![1] >= 290, `the rest waited for the linger (${inserts[1]![1]} ms)`);
  await d.close();
});

t.test('a lone batch waits for the linger', async (t) => {
  const inserts: number[] = [];
  const d = startDirectLanding({ land: async (e) => { inserts.push(e.length); }, handOver: async () => {}, maxBatch: 100, lingerMs: 150, log });
  const t0 = Date.now();
  await d.land(ev('a', 3));
  const took = Date.now() - t0;
  t.ok(took >= 140, `landed after ${took} ms (linger 150)`);
  t.same(inserts, [3]);
  await d.close();
});

t.test('one insert at a time', async (t) => {
  let flying = 0; let most = 0;
  const d = startDirectLanding({
    // Each insert lasts past the event-loop turn in which the six batches are queued.
    land: async () => { flying++; most = Math.max(most, flying); await new Promise((r) => setImmediate(r)); flying--; },
    handOver: async () => {}, maxBatch: 2, lingerMs: 1, log,
  });
  await Promise.all(Array.from({ length: 6 }, (_, i) => d.land(ev(`b${i}`, 2))));
  t.equal(most, 1);
  await d.close();
});

t.test('a failed insert hands each batch to the event stream; one that cannot be handed over fails alone', async (t) => {
  const handed: string[] = [];
  const d = startDirectLanding({
    land: async () => { throw new Error('ClickHouse is down'); },
    handOver: async (e) => {
      if (e[0]!.id.startsWith('bad')) throw new Error('NATS is down');
      handed.push(e[0]!.id);
    },
    maxBatch: 100, lingerMs: 5, log,
  });
  const r = await Promise.all([d.land(ev('a', 2)), d.land(ev('bad', 2)), d.land(ev('c', 1))].map(settled));
  t.same(r, ['ok', 'failed: NATS is down', 'ok']);
  t.same(handed.sort(), ['a-0', 'c-0']);
  await d.close();
});

t.test('room() waits while maxPending events wait, and frees after an insert', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  const d = startDirectLanding({ land: () => gate, handOver: async () => {}, maxBatch: 5, lingerMs: 1, maxPending: 5, log });
  const first = d.land(ev('a', 5));
  let roomy = false;
  const room = d.room().then(() => { roomy = true; });
  // A turn of the event loop: room() would have resolved by then if it did not wait for the insert.
  await new Promise((r) => setImmediate(r));
  t.notOk(roomy, 'no room while 5 events are being inserted');
  release();
  await first;
  await room;
  t.ok(roomy, 'room once they landed');
  await d.close();
});

t.test('close() lands what waits at once; nothing for no events', async (t) => {
  const inserts: number[] = [];
  const d = startDirectLanding({ land: async (e) => { inserts.push(e.length); }, handOver: async () => {}, maxBatch: 100, lingerMs: 60_000, log });
  await d.land([]);
  t.same(inserts, [], 'no insert for a batch without events');
  const p = d.land(ev('a', 3));
  const t0 = Date.now();
  await d.close();
  t.equal(await settled(p), 'ok');
  t.ok(Date.now() - t0 < 1_000, 'without the 60 s linger');
  t.same(inserts, [3]);
});
