// The two streams on NATS JetStream. Calls and events are stored durably (file storage, work-queue
// retention); results go back over core NATS to the submitting process's own subject
// `_hw.res.<nodeId>`, where one subscription routes them to waiting submits by call id.
import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../api/log.js';
import { decodeCallResults, decodeEventRecord, decodeIngestCall, encodeCallResults, encodeEventRecord, encodeIngestCall,
  type IdentifiedResult } from '../../schemas/avro.js';
import type { CallResult, IngestCall } from '../types.js';
import { startBatchConsumer } from './batch-consumer.js';
import { StreamUnavailableError } from './errors.js';
import { AckedPublisher } from './publisher.js';
import { ensureStreams, streamNames } from './setup.js';
import { DEFAULT_MAX_BATCH, DEFAULT_RESULT_TIMEOUT_MS, type Consumer, type EventStream, type IngestStream } from './types.js';
import { createWaiter, deliver, settledWithin, type Waiter } from './waiter.js';

export interface JetStreamOptions {
  nc: NatsConnection;
  log: Logger;
  /** Names this process's result subject; random by default. */
  nodeId?: string;
  resultTimeoutMs?: number;
  /** Isolated stream, subject and consumer names (tests): `{ prefix: 'T1234' }`. */
  names?: { prefix?: string };
  /** A publish not acknowledged by the stream within this is refused (503); default 2 s. */
  pubAckTimeoutMs?: number;
  /** Partial batches wait this long for more messages; default 5 ms. */
  lingerMs?: number;
  /** Redelivery delay after a failed ingest batch; default 1 s. */
  nakDelayMs?: number;
}

/** Subject tokens cannot hold spaces, dots or wildcards; such org ids share one token. */
function subjectToken(s: string): string { return /^[A-Za-z0-9_-]+$/.test(s) ? s : '_'; }

export async function createJetStreams(opts: JetStreamOptions): Promise<{ ingest: IngestStream; events: EventStream }> {
  const { nc } = opts;
  const log = opts.log.child({ component: 'stream', mode: 'jetstream' });
  const names = streamNames(opts.names?.prefix);
  await ensureStreams(await jetstreamManager(nc), names);
  const js = jetstream(nc);
  const nodeId = opts.nodeId ?? randomBytes(8).toString('hex');
  const replyTo = `_hw.res.${nodeId}`;
  const resultTimeoutMs = opts.resultTimeoutMs ?? DEFAULT_RESULT_TIMEOUT_MS;
  const pubAckTimeoutMs = opts.pubAckTimeoutMs ?? 2_000;
  const lingerMs = opts.lingerMs ?? 5;
  const nakDelayMs = opts.nakDelayMs ?? 1_000;

  // Connection state for healthy(); the status iterator ends with the connection.
  let connected = !nc.isClosed();
  const status = nc.status();
  void (async () => {
    for await (const s of status) {
      if (s.type === 'disconnect') connected = false;
      else if (s.type === 'reconnect') connected = true;
    }
  })().catch(() => undefined);
  const stopStatus = () => (status as { stop?: () => void }).stop?.();

  // --- ingest: front-end side -------------------------------------------------------------
  const ingestPublisher = new AckedPublisher(nc, log, pubAckTimeoutMs);
  const submits = new Set<Waiter<CallResult>>();
  const waitingById = new Map<string, { waiter: Waiter<CallResult>; index: number }>();
  const results = nc.subscribe(replyTo, { callback: (err, msg) => {
    if (err) { log.warn('result subscription failed', { err }); return; }
    let list: IdentifiedResult[];
    try { list = decodeCallResults(msg.data); } catch (err) { log.error('unreadable results message', { err }); return; }
    for (const { id, result } of list) {
      const w = waitingById.get(id);
      if (!w) continue; // timed out, or a second result after a redelivery: the first one counted
      waitingById.delete(id);
      deliver(w.waiter, w.index, result);
    }
  } });

  const consumers = new Set<Consumer>();
  const track = (c: Consumer): Consumer => {
    consumers.add(c);
    return { close: async () => { consumers.delete(c); await c.close(); } };
  };
  let ingestClosed = false;

  const ingest: IngestStream = {
    submit(calls) {
      if (calls.length === 0) return Promise.resolve([]);
      if (ingestClosed || nc.isClosed()) return Promise.reject(new StreamUnavailableError('the ingestion stream is closed'));
      for (const c of calls) {
        // Results are routed by call id; two waiting calls with one id could not both be answered.
        if (waitingById.has(c.id)) return Promise.reject(new Error(`call id ${c.id} is already waiting for its result`));
      }
      const { waiter, promise } = createWaiter<CallResult>(calls.length, submits, {
        timeoutMs: resultTimeoutMs,
        onTimeout: () => new StreamUnavailableError('no result from the ingestion workers in time'),
        onSettle: () => { for (const c of calls) if (waitingById.get(c.id)?.waiter === waiter) waitingById.delete(c.id); },
      });
      for (let i = 0; i < calls.length; i++) waitingById.set(calls[i]!.id, { waiter, index: i });
      ingestPublisher.publish(calls.map((c) => ({
        subject: `${names.ingestSubject}.${subjectToken(c.orgId)}`, data: encodeIngestCall(c, replyTo), msgId: c.id,
      }))).catch((err: Error) => waiter.reject(err));
      return promise;
    },

    consume(handler, o) {
      return track(startBatchConsumer<{ call: IngestCall; replyTo: string }>({
        js, stream: names.ingestStream, durable: names.ingestConsumer, log,
        maxBatch: o?.maxBatch ?? DEFAULT_MAX_BATCH, maxInFlight: o?.maxInFlight ?? 2, lingerMs, fetchExpiresMs: 2_000,
        nakDelayMs: () => nakDelayMs,
        decode: (m: JsMsg) => decodeIngestCall(m.data),
        async process(items, msgs) {
          const out = await handler(items.map((it) => it.call), { redelivered: msgs.map((m) => m.info.deliveryCount > 1) });
          if (!Array.isArray(out) || out.length !== items.length) {
            throw new Error(`ingest handler returned ${Array.isArray(out) ? out.length : 'no'} results for ${items.length} calls`);
          }
          // One message per submitting process; published before the acks on the same connection.
          const byReply = new Map<string, IdentifiedResult[]>();
          for (let i = 0; i < items.length; i++) {
            const { call, replyTo: to } = items[i]!;
            let list = byReply.get(to);
            if (!list) byReply.set(to, (list = []));
            list.push({ id: call.id, result: out[i]! });
          }
          for (const [to, list] of byReply) nc.publish(to, encodeCallResults(list));
        },
      }));
    },

    healthy: () => !ingestClosed && connected && !nc.isClosed(),

    async close() {
      if (ingestClosed) return;
      ingestClosed = true;
      await Promise.all([...consumers].map((c) => c.close()));
      consumers.clear();
      // Calls already in the stream may still be answered by other workers: wait a little.
      await settledWithin(submits, Math.min(resultTimeoutMs, 5_000));
      for (const w of [...submits]) w.reject(new StreamUnavailableError('the ingestion stream closed before the call was answered'));
      await ingestPublisher.close();
      if (!nc.isClosed()) results.unsubscribe();
      stopStatus();
    },
  };

  // --- events -----------------------------------------------------------------------------
  const eventsPublisher = new AckedPublisher(nc, log, pubAckTimeoutMs);
  const eventConsumers = new Set<Consumer>();
  let eventsClosed = false;

  const events: EventStream = {
    publish(list) {
      if (eventsClosed) return Promise.reject(new StreamUnavailableError('the event stream is closed'));
      return eventsPublisher.publish(list.map((e) => ({ subject: names.eventsSubject, data: encodeEventRecord(e), msgId: e.id })));
    },
    consume(handler, o) {
      const c = startBatchConsumer({
        js, stream: names.eventsStream, durable: names.eventsConsumer, log,
        maxBatch: o?.maxBatch ?? DEFAULT_MAX_BATCH, maxInFlight: o?.maxInFlight ?? 2, lingerMs, fetchExpiresMs: 2_000,
        // A failing writer (ClickHouse down) backs off up to 30 s between attempts.
        nakDelayMs: (count) => Math.min(30_000, 1_000 * 2 ** Math.max(0, count - 1)),
        decode: (m: JsMsg) => decodeEventRecord(m.data),
        process: (items) => handler(items),
      });
      eventConsumers.add(c);
      return { close: async () => { eventConsumers.delete(c); await c.close(); } };
    },
    async close() {
      if (eventsClosed) return;
      eventsClosed = true;
      await Promise.all([...eventConsumers].map((c) => c.close()));
      eventConsumers.clear();
      await eventsPublisher.close();
    },
  };

  return { ingest, events };
}
