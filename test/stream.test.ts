// The ingestion streams, in-process and (when a NATS server answers on 127.0.0.1:4222) on
// JetStream, through the same scenarios; plus the Avro wire records. JetStream tests isolate
// themselves with a random name prefix and delete their streams afterwards.
import t from 'tap';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createLogger } from '../lib/log.js';
import { createInProcessStreams, createJetStreams, deleteStreams, streamNames, StreamUnavailableError,
  type EventStream, type IngestStream } from '../pipeline/stream/mod.js';
import { batchMessages, decodeCallResult, decodeCallResults, decodeEventRecord, decodeEvents, decodeIngestCall, decodeIngestCalls,
  encodeCallResult, encodeCallResults, encodeEvent, encodeEventRecord, encodeEvents, encodeIngestCall, encodeIngestCalls, EVENT_BATCH_MARK } from '../schemas/avro.js';
import type { CallResult, EventRecord, IngestCall } from '../pipeline/types.js';
import { until } from './helpers/server.js';

const log = createLogger('silent');

function reachable(port: number) {
  return new Promise<boolean>((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
    c.on('error', () => resolve(false));
  });
}
const natsUp = await reachable(4222);

let seq = 0;
function mkCall(orgId = 'org_1'): IngestCall {
  const n = ++seq;
  return {
    id: `call_${n}_${randomBytes(4).toString('hex')}`, kind: 'track', orgId, appId: 'app_1', sourceId: 'src_1',
    environment: 'production', receivedAt: Date.now(),
    body: { identifiers: { userId: `u${n}` }, event: 'Clicked', properties: { n }, messageId: `m${n}` },
  };
}
function mkEvent(i: number): EventRecord {
  return {
    id: `evt_${i}_${randomBytes(4).toString('hex')}`, orgId: 'org_1', appId: 'app_1', sourceId: 'src_1', profileId: 'prof_1',
    environment: 'development', event: 'Viewed', properties: { i }, timestamp: new Date().toISOString(),
    receivedAt: new Date().toISOString(), messageId: i % 2 ? `m${i}` : null,
  };
}
const answer = (c: IngestCall): CallResult => ({ status: 201, data: { id: c.id } });
/** Every event acknowledged and none left to deliver (JetStream). */
const settled = (acks: NonNullable<Opened['eventAcks']>) => until(async () => { const a = await acks(); return a.ackPending === 0 && a.pending === 0; }, 15_000, 10);

/**
 * A TCP proxy to NATS whose connections can be dropped (the client reconnects) or refused for good,
 * or whose server-to-client bytes can be held back (the connection stays up, nothing arrives).
 */
async function proxy() {
  const sockets = new Set<net.Socket>();
  const ups = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.connect(4222, '127.0.0.1');
    sockets.add(client); sockets.add(up); ups.add(up);
    client.pipe(up).pipe(client);
    const end = () => { client.destroy(); up.destroy(); sockets.delete(client); sockets.delete(up); };
    client.on('error', end); up.on('error', end); client.on('close', end); up.on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    drop: () => { for (const so of sockets) so.destroy(); },
    hold: () => { for (const u of ups) u.pause(); },
    release: () => { for (const u of ups) u.resume(); },
    close: () => new Promise<void>((r) => { for (const so of sockets) so.destroy(); server.close(() => r()); }),
  };
}

interface Opened {
  ingest: IngestStream;
  events: EventStream;
  /** JetStream only: unacknowledged / undelivered messages of the events consumer. */
  eventAcks?: () => Promise<{ ackPending: number; pending: number }>;
  close(): Promise<void>;
}

async function openJetStream(nc?: NatsConnection, prefix = 'T' + randomBytes(5).toString('hex')): Promise<Opened & { nc: NatsConnection; prefix: string }> {
  const own = !nc;
  const conn = nc ?? await connect({ servers: '127.0.0.1:4222' });
  const s = await createJetStreams({ nc: conn, log, names: { prefix }, nakDelayMs: 200, resultTimeoutMs: 20_000 });
  const names = streamNames(prefix);
  return {
    ...s, nc: conn, prefix,
    async eventAcks() {
      const i = await (await jetstreamManager(conn)).consumers.info(names.eventsStream, names.eventsConsumer);
      return { ackPending: i.num_ack_pending, pending: i.num_pending };
    },
    async close() {
      await s.ingest.close(); await s.events.close();
      if (!own) return;
      await deleteStreams(await jetstreamManager(conn), names);
      await conn.close();
    },
  };
}

const backends: Array<{ name: string; up: boolean; open(): Promise<Opened> }> = [
  { name: 'in-process', up: true, open: async () => { const s = createInProcessStreams({ log }); return { ...s, close: async () => { await s.ingest.close(); await s.events.close(); } }; } },
  { name: 'jetstream', up: natsUp, open: () => openJetStream() },
];

for (const b of backends) {
  const skip = (t: { plan(n: number, why?: string): void }) => { if (!b.up) t.plan(0, 'no NATS'); return !b.up; };

  t.test(`${b.name}: \`redelivers\` says whether a batch may defer its acknowledgement`, async (t) => {
    if (skip(t)) return;
    const s = await b.open();
    t.teardown(() => s.close());
    let offered: boolean | undefined;
    const consumer = s.ingest.consume(async (calls, info) => { offered ??= typeof info.defer === 'function'; return calls.map(answer); });
    t.teardown(() => consumer.close());
    await s.ingest.submit([mkCall()]);
    t.equal(s.ingest.redelivers, b.name === 'jetstream', 'JetStream redelivers what is not acknowledged; in-process, nothing survives the process');
    t.equal(offered, s.ingest.redelivers, 'defer is offered exactly where the stream redelivers');
  });

  t.test(`${b.name}: 1,000 calls from concurrent submits come back to their callers in order`, async (t) => {
    if (skip(t)) return;
    const s = await b.open();
    t.teardown(() => s.close());
    let biggest = 0;
    let processed = 0;
    const consumer = s.ingest.consume(async (calls) => {
      biggest = Math.max(biggest, calls.length);
      processed += calls.length;
      return calls.map(answer);
    }, { maxBatch: 64 });
    const submits = Array.from({ length: 10 }, () => Array.from({ length: 100 }, () => mkCall()));
    const results = await Promise.all(submits.map((calls) => s.ingest.submit(calls)));
    for (let i = 0; i < submits.length; i++) {
      t.same(results[i], submits[i]!.map(answer), `submit ${i} got its own results in order`);
    }
    t.ok(biggest <= 64, `batches never exceed maxBatch (largest ${biggest})`);
    t.equal(processed, 1000, 'every call processed once');
    t.ok(s.ingest.healthy());
    await consumer.close();
  });

  t.test(`${b.name}: a handler that throws once leads to redelivery and one result per call`, async (t) => {
    if (skip(t)) return;
    const s = await b.open();
    t.teardown(() => s.close());
    let failed = false;
    const seen = new Map<string, boolean[]>();
    const consumer = s.ingest.consume(async (calls, info) => {
      calls.forEach((c, i) => seen.set(c.id, [...(seen.get(c.id) ?? []), info.redelivered[i]!]));
      if (!failed) { failed = true; throw new Error('boom'); }
      return calls.map(answer);
    });
    const calls = Array.from({ length: 50 }, () => mkCall());
    const results = await s.ingest.submit(calls);
    t.same(results, calls.map(answer), 'one result per call, in order');
    const again = [...seen.values()].filter((v) => v.length > 1);
    t.ok(again.length > 0, 'some calls were delivered again');
    t.ok(again.every((v) => v[0] === false && v[v.length - 1] === true), 'first delivery fresh, the later one marked redelivered');
    await consumer.close();
  });

  t.test(`${b.name}: events reach the consumer and are acknowledged after the handler`, async (t) => {
    if (skip(t)) return;
    const s = await b.open();
    t.teardown(() => s.close());
    const got = new Map<string, EventRecord>();
    let open!: () => void;
    const gate = new Promise<void>((r) => { open = r; });
    let entered = false;
    let failOnce = true;
    const consumer = s.events.consume(async (events) => {
      entered = true;
      await gate;
      if (failOnce) { failOnce = false; throw new Error('clickhouse down'); }
      for (const e of events) got.set(e.id, e);
    }, { maxBatch: 100 });
    const events = Array.from({ length: 300 }, (_, i) => mkEvent(i));
    let published = false;
    const pub = Promise.all([s.events.publish(events.slice(0, 150)), s.events.publish(events.slice(150))]).then(() => { published = true; });
    t.ok(await until(() => entered, 15_000, 10), 'the handler has the first batch');
    if (s.eventAcks) {
      await pub;
      t.ok((await s.eventAcks()).ackPending > 0, 'not acknowledged while the handler runs');
    } else {
      // The handler runs on a later turn than the publish: a publish that resolved on enqueue would
      // have resolved by now.
      t.notOk(published, 'in-process publish waits until the events are written');
    }
    open();
    await pub;
    t.ok(await until(() => got.size === 300, 15_000, 10), 'all 300 events handled');
    t.same([...got.keys()].sort(), events.map((e) => e.id).sort(), 'every event delivered');
    t.same(got.get(events[7]!.id), events[7]);
    if (s.eventAcks) t.ok(await settled(s.eventAcks), 'all acknowledged after the handler resolved');
    await consumer.close();
  });

  // A replayed track re-emits its stored event: a later hand-over can start with the same event and
  // hold as many events as an earlier one, and must still deliver its new events.
  t.test(`${b.name}: a hand-over that starts with an earlier event delivers its new events`, async (t) => {
    if (skip(t)) return;
    const s = await b.open();
    t.teardown(() => s.close());
    const got = new Map<string, number>();
    const consumer = s.events.consume(async (events) => { for (const e of events) got.set(e.id, (got.get(e.id) ?? 0) + 1); }, { maxBatch: 100 });
    const replayed = mkEvent(1);
    const first = [replayed, mkEvent(2), mkEvent(3)];
    const second = [replayed, mkEvent(4), mkEvent(5)];
    await s.events.publish(first);
    await s.events.publish(second);
    await s.events.publish(first); // a retried publish of the same events
    const ids = [...first, ...second].map((e) => e.id);
    t.ok(await until(() => ids.every((id) => got.has(id)), 15_000, 10), 'every event of both hand-overs delivered');
    if (s.eventAcks) {
      t.ok(await settled(s.eventAcks), 'all acknowledged');
      t.equal(got.get(first[1]!.id), 1, 'the exact repeat of a hand-over is stored once');
    }
    await consumer.close();
  });

  t.test(`${b.name}: a consumer closed mid-stream leaves the rest to a later one`, async (t) => {
    if (skip(t)) return;
    const s = await b.open();
    t.teardown(() => s.close());
    const calls = Array.from({ length: 500 }, () => mkCall());
    const byFirst = new Set<string>();
    // Once it has 100 calls, the first consumer's handler holds its batch until close() was called.
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    const first = s.ingest.consume(async (batch) => {
      batch.forEach((c) => byFirst.add(c.id));
      if (byFirst.size >= 100) await held;
      return batch.map(answer);
    }, { maxBatch: 20, maxInFlight: 1 });
    const pending = Promise.all([0, 1, 2, 3, 4].map((i) => s.ingest.submit(calls.slice(i * 100, i * 100 + 100))));
    t.ok(await until(() => byFirst.size >= 100, 15_000, 10), 'the first consumer took 100 calls');
    const closing = first.close();
    release();
    await closing;
    const afterClose = byFirst.size;
    t.ok(afterClose < 500, `first consumer stopped early (${afterClose} processed)`);
    const bySecond = new Set<string>();
    const second = s.ingest.consume(async (batch) => { batch.forEach((c) => bySecond.add(c.id)); return batch.map(answer); });
    const results = (await pending).flat();
    t.same(results, calls.map(answer), 'every call answered');
    // The second consumer answered the rest: had the first taken any batch after close(), it is in byFirst now.
    t.equal(byFirst.size, afterClose, 'nothing processed by the first consumer after close()');
    t.ok(calls.every((c) => byFirst.has(c.id) || bySecond.has(c.id)), 'nothing lost');
    await second.close();
  });
}

t.test('in-process: submit refuses when full or closed', async (t) => {
  const s = createInProcessStreams({ log, maxPending: 10 });
  await t.rejects(s.ingest.submit(Array.from({ length: 11 }, () => mkCall())), StreamUnavailableError, 'full queue -> 503');
  const timed = createInProcessStreams({ log, resultTimeoutMs: 50 });
  await t.rejects(timed.ingest.submit([mkCall()]), StreamUnavailableError, 'no worker -> result timeout');
  await s.ingest.close(); await s.events.close(); await timed.ingest.close(); await timed.events.close();
  await t.rejects(s.ingest.submit([mkCall()]), StreamUnavailableError, 'closed');
  await t.rejects(s.events.publish([mkEvent(1)]), StreamUnavailableError, 'closed');
  t.notOk(s.ingest.healthy());
});

t.test('jetstream: two front ends starting at once share the streams; results go to the submitter', async (t) => {
  if (!natsUp) { t.plan(0, 'no NATS'); return; }
  const prefix = 'T' + randomBytes(5).toString('hex');
  const [a, b] = await Promise.all([openJetStream(undefined, prefix), openJetStream(undefined, prefix)]);
  t.teardown(async () => { await b.close(); await a.close(); });
  const worker = a.ingest.consume(async (calls) => calls.map(answer));
  const fromA = Array.from({ length: 200 }, () => mkCall('org_a'));
  const fromB = Array.from({ length: 200 }, () => mkCall('org b.with*odd>chars'));
  const [ra, rb] = await Promise.all([a.ingest.submit(fromA), b.ingest.submit(fromB)]);
  t.same(ra, fromA.map(answer));
  t.same(rb, fromB.map(answer), 'answered across processes (and odd org ids still publish)');
  const one = mkCall();
  const first = a.ingest.submit([one]);
  await t.rejects(a.ingest.submit([one]), /unique/, 'a call id already waiting is refused, not left hanging');
  t.same(await first, [answer(one)]);
  await worker.close();
});

t.test('jetstream: submit fails fast when the connection is closed or unreachable', async (t) => {
  if (!natsUp) { t.plan(0, 'no NATS'); return; }
  // Through a TCP proxy that we cut: the client keeps reconnecting, publishes are never acknowledged.
  const p = await proxy();
  const nc = await connect({ servers: `127.0.0.1:${p.port}`, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const prefix = 'T' + randomBytes(5).toString('hex');
  const s = await openJetStream(nc, prefix);
  t.teardown(async () => {
    await s.close().catch(() => undefined);
    await nc.close().catch(() => undefined);
    const direct = await connect({ servers: '127.0.0.1:4222' });
    await deleteStreams(await jetstreamManager(direct), streamNames(prefix));
    await direct.close();
  });
  t.ok(s.ingest.healthy());
  await p.close();
  let t0 = Date.now();
  await t.rejects(s.ingest.submit([mkCall(), mkCall()]), StreamUnavailableError, 'unreachable -> 503');
  t.ok(Date.now() - t0 < 5_000, `rejected in ${Date.now() - t0} ms`);
  await t.rejects(s.events.publish([mkEvent(1)]), StreamUnavailableError, 'events too');
  t.notOk(s.ingest.healthy(), 'unhealthy while disconnected');
  await nc.close();
  t0 = Date.now();
  await t.rejects(s.ingest.submit([mkCall()]), StreamUnavailableError, 'closed connection -> 503');
  t.ok(Date.now() - t0 < 100, 'at once');
});

t.test('jetstream: a worker whose connection dropped resumes after the reconnect', async (t) => {
  if (!natsUp) { t.plan(0, 'no NATS'); return; }
  const p = await proxy();
  const workerNc = await connect({ servers: `127.0.0.1:${p.port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const front = await openJetStream();
  const worker = await openJetStream(workerNc, front.prefix);
  t.teardown(async () => { await worker.close(); await workerNc.close(); await front.close(); await p.close(); });
  const consumer = worker.ingest.consume(async (calls) => calls.map(answer));
  const before = [mkCall()];
  t.same(await front.ingest.submit(before), before.map(answer));
  p.drop();
  const calls = Array.from({ length: 20 }, () => mkCall());
  t.same(await front.ingest.submit(calls), calls.map(answer), 'answered once the worker is back');
  await consumer.close();
});

t.test('jetstream: a fetch ended by missed heartbeats pulls again at once', async (t) => {
  if (!natsUp) { t.plan(0, 'no NATS'); return; }
  const p = await proxy();
  const workerNc = await connect({ servers: `127.0.0.1:${p.port}` });
  const front = await openJetStream();
  const lines: string[] = [];
  const worker = await createJetStreams({ nc: workerNc, log: createLogger('debug', {}, (l) => lines.push(l)), names: { prefix: front.prefix }, nakDelayMs: 200, resultTimeoutMs: 20_000 });
  t.teardown(async () => { p.release(); await worker.ingest.close(); await worker.events.close(); await workerNc.close(); await front.close(); await p.close(); });
  const consumer = worker.ingest.consume(async (calls) => calls.map(answer));
  const first = [mkCall()];
  t.same(await front.ingest.submit(first), first.map(answer));
  const names = streamNames(front.prefix);
  const jsm = await jetstreamManager(front.nc);
  t.ok(await until(async () => (await jsm.consumers.info(names.ingestStream, names.ingestConsumer)).num_waiting > 0, 10_000, 20), 'a fetch is open');
  // The server's idle heartbeats for that fetch do not reach the worker (its connection stays up):
  // the client ends the fetch.
  p.hold();
  t.ok(await until(() => lines.some((l) => /heartbeats missed|missed heartbeats/.test(l)), 10_000, 10), 'the worker ended the fetch');
  p.release();
  const calls = [mkCall()];
  const sent = Date.now();
  t.same(await front.ingest.submit(calls), calls.map(answer), 'answered');
  // Before, the pull loop slept a second after such a fetch, and every call in the stream waited.
  t.ok(Date.now() - sent < 800, `answered ${Date.now() - sent} ms after the submit`);
  t.notOk(lines.some((l) => l.includes('"level":"warn"')), 'nothing logged as a failure');
  await consumer.close();
});

t.test('jetstream: a publish the stream refuses (stream gone) rejects with StreamUnavailableError', async (t) => {
  if (!natsUp) { t.plan(0, 'no NATS'); return; }
  const s = await openJetStream();
  t.teardown(() => s.close());
  await (await jetstreamManager(s.nc)).streams.delete(streamNames(s.prefix).ingestStream);
  const t0 = Date.now();
  await t.rejects(s.ingest.submit([mkCall()]), StreamUnavailableError);
  t.ok(Date.now() - t0 < 2_500, `rejected in ${Date.now() - t0} ms`);
});

t.test('jetstream: a message refused as a repeat is counted', async (t) => {
  if (!natsUp) { t.plan(0, 'no NATS'); return; }
  const conn = await connect({ servers: '127.0.0.1:4222' });
  const prefix = 'T' + randomBytes(5).toString('hex');
  const counted = new Map<string, number>();
  const s = await createJetStreams({ nc: conn, log, names: { prefix }, drops: { add: (reason, n = 1) => { counted.set(reason, (counted.get(reason) ?? 0) + n); } } });
  t.teardown(async () => {
    await s.ingest.close(); await s.events.close();
    await deleteStreams(await jetstreamManager(conn), streamNames(prefix));
    await conn.close();
  });
  const events = [mkEvent(1), mkEvent(2)];
  await s.events.publish(events);
  t.same([...counted], [], 'a first publish drops nothing');
  await s.events.publish(events);
  t.same([...counted], [['duplicate_messages', 1]], 'the repeat is counted');
});

t.test('avro round trip of the wire records', async (t) => {
  const call: IngestCall = {
    id: 'call_ü', kind: 'identify', orgId: 'org_1', appId: 'app_1', sourceId: 'src_1', environment: 'development',
    receivedAt: 1_700_000_000_123,
    body: { identifiers: { email: 'zoë@example.com', anonymousId: '匿名' }, traits: { nested: { a: [1, null, { b: '😀' }] }, none: null } },
  };
  t.same(decodeIngestCall(encodeIngestCall(call, '_hw.res.n1')), { call, replyTo: '_hw.res.n1' });
  const promoted = { ...mkCall(), promoted: true };
  t.same(decodeIngestCall(encodeIngestCall(promoted, 'r')).call, promoted, 'promoted survives');

  const ok: CallResult = { status: 201, data: { id: 'evt_1', props: { 'ключ': ['значение', null] } } };
  const nul: CallResult = { status: 200, data: null };
  const err: CallResult = { status: 422, error: { code: 'validation_failed', message: 'bad “quotes”' } };
  for (const r of [ok, nul, err]) t.same(decodeCallResult(encodeCallResult('c1', r)), { id: 'c1', result: r });
  const batch = [{ id: 'a', result: ok }, { id: 'b', result: err }, { id: 'c', result: nul }];
  t.same(decodeCallResults(encodeCallResults(batch)), batch);

  const ev: EventRecord = { ...mkEvent(2), event: 'Überweisung ✓', properties: { deep: { x: { y: [1, 2, { z: 'ß' }] } }, n: null }, messageId: null };
  t.same(decodeEventRecord(encodeEventRecord(ev)), ev);
  const withMsg = { ...ev, messageId: 'msg_1' };
  t.same(decodeEventRecord(new Uint8Array(encodeEventRecord(withMsg))), withMsg, 'decodes a plain Uint8Array too');

  // Batch messages, and single-record messages of earlier versions, both read by the decoders.
  const many = [ev, withMsg, { ...mkEvent(3), id: 'x'.repeat(300) }];
  const one = batchMessages(many.map(encodeEventRecord), 100, 1 << 20);
  t.same(one.map((m) => [m.first, m.count]), [[0, 3]], 'three events in one message');
  t.same(decodeEvents(one[0]!.data), many, 'a batch message decodes to its events, in order');
  t.same(decodeEvents(new Uint8Array(batchMessages([encodeEventRecord(withMsg)], 100, 1 << 20)[0]!.data)), [withMsg], 'a batch of one');
  for (const single of [ev, { ...ev, id: 'y'.repeat(64) }, { ...ev, id: 'z'.repeat(5000) }]) {
    t.same(decodeEvents(encodeEventRecord(single)), [single], `a single-event message (id of ${single.id.length} characters) still decodes`);
  }
  const events = Array.from({ length: 205 }, (_, i) => ({ ...mkEvent(i), id: `evt_${i}` }));
  const byCount = batchMessages(events.map(encodeEventRecord), 100, 1 << 20);
  t.same(byCount.map((m) => [m.first, m.count]), [[0, 100], [100, 100], [200, 5]], 'at most maxCount records per message');
  t.same(byCount.flatMap((m) => decodeEvents(m.data)), events, 'every event once, in order');
  const big = { ...mkEvent(9), properties: { blob: 'b'.repeat(3000) } };
  const bySize = batchMessages([ev, big, big, ev].map(encodeEventRecord), 100, 4000);
  t.same(bySize.map((m) => m.count), [2, 2], 'no record is added past maxBytes');
  t.same(batchMessages([encodeEventRecord(big)], 100, 100).map((m) => m.count), [1], 'a record larger than maxBytes goes alone');
  const calls = [call, promoted, mkCall()];
  const msg = batchMessages(calls.map((c) => encodeIngestCall(c, '_hw.res.n2')), 100, 1 << 20);
  t.same(decodeIngestCalls(msg[0]!.data), calls.map((c) => ({ call: c, replyTo: '_hw.res.n2' })), 'calls of one turn travel in one message');
  t.same(decodeIngestCalls(encodeIngestCall(call, 'r')), [{ call, replyTo: 'r' }], 'a single-call message of an earlier version still decodes');
});

t.test('records encoded together equal records encoded one by one, past the first allocation', async (t) => {
  // 300 calls and events, one of each ~20 KB: the shared allocation grows several times.
  const calls = Array.from({ length: 300 }, (_, i) => {
    const c = mkCall();
    return i === 7 ? { ...c, id: `call_${i}`, body: { ...c.body, properties: { blob: 'x'.repeat(20_000) } } } : { ...c, id: `call_${i}` };
  });
  const encoded = encodeIngestCalls(calls, '_hw.res.n3');
  t.equal(encoded.length, calls.length);
  t.ok(encoded.every((b, i) => b.equals(encodeIngestCall(calls[i]!, '_hw.res.n3'))), 'byte for byte what encodeIngestCall gives');
  const msgs = batchMessages(encoded, 100, 256 * 1024);
  t.same(msgs.flatMap((m) => decodeIngestCalls(m.data)), calls.map((c) => ({ call: c, replyTo: '_hw.res.n3' })), 'every call once, in order');
  const events = Array.from({ length: 300 }, (_, i) => ({ ...mkEvent(i), id: `evt_${i}`, ...(i === 3 ? { properties: { blob: 'é'.repeat(20_000) } } : {}), ...(i % 2 ? { context: { ip: '203.0.113.1' } } : {}) }));
  const evEncoded = encodeEvents(events);
  t.ok(evEncoded.every((b, i) => b.equals(encodeEvent(events[i]!))), 'byte for byte what encodeEvent gives');
  t.same(batchMessages(evEncoded, 100, 256 * 1024, EVENT_BATCH_MARK).flatMap((m) => decodeEvents(m.data)), events, 'every event once, in order');
  t.same(encodeEvents([]), [], 'nothing to encode');
});
