// The ingestion stream on JetStream. Front-end side: calls are published durably and their
// results come back over core NATS to this process's subject `_hw.res.<nodeId>`, where one
// subscription routes them to the waiting submits by call id. The calls submitted in one turn of
// the event loop (each HTTP request is its own callback) travel as one message per org: one
// publish, delivery and ack for all of them. Worker side: batches from the shared durable
// consumer; results are published (grouped per submitting process) before the acks.
import type { JsMsg } from '@nats-io/jetstream';
import { batchMessages, decodeCallResults, decodeIngestCalls, encodeCallResults, encodeIngestCalls, type IdentifiedResult } from '../../schemas/avro.js';
import type { CallResult, IngestCall } from '../types.js';
import { startBatchConsumer } from './batch-consumer.js';
import { StreamUnavailableError } from './errors.js';
import { ConsumerSet, streamLag, type JsContext } from './js-context.js';
import { AckedPublisher, messageIdOf, type OutMessage } from './publisher.js';
import { DEFAULT_MAX_BATCH, HAND_BACK_MS, resultsOf, type IngestStream } from './types.js';
import { createWaiter, deliver, settledWithin, type Waiter } from './waiter.js';

export interface JsIngestOptions {
  replyTo: string;
  resultTimeoutMs: number;
  nakDelayMs: number;
  callMsgId: boolean;
}

/** Calls per stream message at most, and its size beyond which no call is added (NATS refuses
 * payloads over its max_payload, 1 MB by default). */
const CALLS_PER_MESSAGE = 100;
const MESSAGE_BYTES = 256 * 1024;

/** A result as a remote front end receives it from the wire (an error keeps its code and message). */
function asReceived(r: IdentifiedResult): IdentifiedResult {
  const { id, result } = r;
  return 'error' in result ? { id, result: { status: result.status, error: { code: result.error.code, message: result.error.message } } } : r;
}

/** Subject tokens cannot hold spaces, dots or wildcards; such org ids share one token. */
function subjectToken(s: string): string { return /^[A-Za-z0-9_-]+$/.test(s) ? s : '_'; }

export function jetStreamIngest(ctx: JsContext, o: JsIngestOptions, onClosed: () => void): IngestStream {
  const { nc, js, log, names } = ctx;
  const publisher = new AckedPublisher(nc, log, ctx.pubAckTimeoutMs, () => ctx.drops?.add('duplicate_messages'));
  const consumers = new ConsumerSet();
  const submits = new Set<Waiter<CallResult>>();
  const waitingById = new Map<string, { waiter: Waiter<CallResult>; index: number }>();
  let closed = false;
  // Submits of this event-loop turn, sent together on the next one.
  let turn: Array<{ calls: IngestCall[]; waiter: Waiter<CallResult> }> = [];
  let scheduled = false;

  function sendTurn() {
    scheduled = false;
    const submitted = turn.filter((s) => !s.waiter.settled);
    turn = [];
    const bySubject = new Map<string, IngestCall[]>();
    for (const { calls } of submitted) {
      for (const c of calls) {
        const subject = `${names.ingestSubject}.${subjectToken(c.orgId)}`;
        let list = bySubject.get(subject);
        if (!list) bySubject.set(subject, (list = []));
        list.push(c);
      }
    }
    const out: OutMessage[] = [];
    try {
      for (const [subject, list] of bySubject) {
        for (const { data, first, count } of batchMessages(encodeIngestCalls(list, o.replyTo), CALLS_PER_MESSAGE, MESSAGE_BYTES)) {
          out.push({ subject, data, msgId: o.callMsgId ? messageIdOf(list, first, count) : undefined });
        }
      }
    } catch (err) {
      // Not encodable (a bug upstream): nothing was published.
      for (const s of submitted) s.waiter.reject(err as Error);
      return;
    }
    publisher.publish(out).catch((err: Error) => { for (const s of submitted) s.waiter.reject(err); });
  }

  function route(list: IdentifiedResult[]) {
    for (const { id, result } of list) {
      const w = waitingById.get(id);
      if (!w) continue; // timed out, or a second result after a redelivery: the first one counted
      waitingById.delete(id);
      deliver(w.waiter, w.index, result);
    }
  }

  const results = nc.subscribe(o.replyTo, { callback: (err, msg) => {
    if (err) { log.warn('result subscription failed', { err }); return; }
    let list: IdentifiedResult[];
    try { list = decodeCallResults(msg.data); } catch (e) { log.error('unreadable results message', { err: e }); return; }
    route(list);
  } });

  function answer(items: Array<{ call: IngestCall; replyTo: string }>, out: Array<CallResult | undefined>) {
    // One message per submitting process, published before the acks on the same connection.
    const byReply = new Map<string, IdentifiedResult[]>();
    for (let i = 0; i < items.length; i++) {
      if (out[i] === undefined) continue; // handed back: answered when it comes again
      const { call, replyTo } = items[i]!;
      let list = byReply.get(replyTo);
      if (!list) byReply.set(replyTo, (list = []));
      list.push({ id: call.id, result: out[i]! });
    }
    for (const [to, list] of byReply) {
      // Calls this process submitted itself (`serve` runs a front end and a consumer) are answered
      // in place: encoding, a round trip through the NATS server and decoding cost ~10 % of the
      // process's CPU under batch load, and results travel over core NATS, not durably, anyway.
      if (to === o.replyTo) route(list.map(asReceived));
      else nc.publish(to, encodeCallResults(list));
    }
  }

  return {
    submit(calls) {
      if (calls.length === 0) return Promise.resolve([]);
      if (closed || nc.isClosed()) return Promise.reject(new StreamUnavailableError('the ingestion stream is closed'));
      // While reconnecting, publishes would only pile up in the client's buffer: refuse at once.
      if (!ctx.connected()) return Promise.reject(new StreamUnavailableError('NATS is disconnected'));
      // Results are routed by call id; two waiting calls with one id could not both be answered.
      const dup = calls.find((c) => waitingById.has(c.id)) ?? (calls.length > 1 && new Set(calls.map((c) => c.id)).size < calls.length ? calls[0] : undefined);
      if (dup) return Promise.reject(new Error(`call ids must be unique among waiting calls (${dup.id})`));
      const { waiter, promise } = createWaiter<CallResult>(calls.length, submits, {
        timeoutMs: o.resultTimeoutMs,
        onTimeout: () => new StreamUnavailableError('no result from the ingestion workers in time'),
        onSettle: () => { for (const c of calls) if (waitingById.get(c.id)?.waiter === waiter) waitingById.delete(c.id); },
      });
      for (let i = 0; i < calls.length; i++) waitingById.set(calls[i]!.id, { waiter, index: i });
      turn.push({ calls, waiter });
      if (!scheduled) { scheduled = true; setImmediate(sendTurn); }
      return promise;
    },

    consume(handler, co) {
      const maxCalls = Math.max(1, co?.maxBatch ?? DEFAULT_MAX_BATCH);
      return consumers.add(startBatchConsumer<Array<{ call: IngestCall; replyTo: string }>>({
        nc, connected: ctx.connected, js, stream: names.ingestStream, durable: names.ingestConsumer, log,
        // A message holds the calls of one front-end turn for one org (about ten under load); the
        // handler still gets at most maxBatch calls at once (the messages are acked after all).
        maxBatch: Math.max(1, Math.ceil(maxCalls / 10)), maxInFlight: co?.maxInFlight ?? 2,
        lingerMs: ctx.lingerMs, fetchExpiresMs: ctx.fetchExpiresMs, idleFetchExpiresMs: ctx.idleFetchExpiresMs, onReconnect: ctx.onReconnect,
        nakDelayMs: () => o.nakDelayMs,
        decode: (m: JsMsg) => decodeIngestCalls(m.data),
        async process(groups, msgs) {
          const all = groups.flat();
          const again = groups.flatMap((g, i) => g.map(() => msgs[i]!.info.deliveryCount > 1));
          // The message of each call, and the messages of calls handed back (they come again whole).
          const msgOf = groups.flatMap((g, i) => g.map(() => i));
          const back = new Set<number>();
          // What the handler deferred, settled to a value so that none rejects unobserved meanwhile.
          const deferred: Array<Promise<unknown>> = [];
          const defer = (p: Promise<void>) => { deferred.push(p.then(() => undefined, (err: unknown) => err ?? new Error('deferred work failed'))); };
          for (let at = 0; at < all.length; at += maxCalls) {
            const items = all.slice(at, at + maxCalls);
            let answered = false;
            const early = (out: Array<CallResult | undefined>) => { if (!answered && out.length === items.length) { answered = true; answer(items, out); } };
            const got = await handler(items.map((it) => it.call), { redelivered: again.slice(at, at + maxCalls), answer: early, defer });
            const out = got && resultsOf(got);
            if (!out || !Array.isArray(out.results) || out.results.length !== items.length) {
              throw new Error(`ingest handler returned ${Array.isArray(out?.results) ? out.results.length : 'no'} results for ${items.length} calls`);
            }
            for (const k of out.later) back.add(msgOf[at + k]!);
            if (!answered) answer(items, out.results);
          }
          // A message with a call handed back comes again whole; calls of it answered now are then
          // answered from their stored answers (messages hold one org's calls, so this is rare).
          const later = back.size ? { indexes: [...back], delayMs: HAND_BACK_MS } : undefined;
          if (deferred.length === 0) return later ? { later } : undefined;
          return {
            later,
            after: Promise.all(deferred).then((errs) => {
              const err = errs.find((e) => e !== undefined);
              if (err !== undefined) throw err;
            }),
          };
        },
      }));
    },

    healthy: () => !closed && ctx.connected() && !nc.isClosed(),
    redelivers: true,
    lag: () => streamLag(ctx, names.ingestStream),

    async close() {
      if (closed) return;
      closed = true;
      await consumers.closeAll();
      // Calls already in the stream may still be answered by other workers: wait a little.
      if (ctx.connected()) await settledWithin(submits, Math.min(o.resultTimeoutMs, 5_000));
      for (const w of [...submits]) w.reject(new StreamUnavailableError('the ingestion stream closed before the call was answered'));
      await publisher.close(ctx.connected());
      if (!nc.isClosed()) results.unsubscribe();
      onClosed();
    },
  };
}
