// The event hand-over on JetStream: workers publish the events of a batch in messages of up to
// EVENTS_PER_MESSAGE (one publish, delivery and ack each, not one per event); the writer consumes
// and acks after its insert. An event emitted twice (a redelivered call's replay) is collapsed by
// ClickHouse (ReplacingMergeTree on the event id, read with FINAL).
import type { JsMsg } from '@nats-io/jetstream';
import { batchMessages, decodeEvents, encodeEvents, EVENT_BATCH_MARK } from '../../schemas/avro.js';
import type { EventRecord } from '../types.js';
import { startBatchConsumer } from './batch-consumer.js';
import { StreamUnavailableError } from './errors.js';
import { ConsumerSet, streamLag, type JsContext } from './js-context.js';
import { AckedPublisher, messageIdOf } from './publisher.js';
import { DEFAULT_MAX_BATCH, type EventStream } from './types.js';

/** Events per stream message (an insert slices at 10,000 rows, and maxBatch / 20 messages are read at once). */
const EVENTS_PER_MESSAGE = 100;
/** Size beyond which no event is added to a message (NATS max_payload is 1 MB by default). */
const MESSAGE_BYTES = 256 * 1024;

export function jetStreamEvents(ctx: JsContext, onClosed: () => void): EventStream {
  const { nc, js, log, names } = ctx;
  const publisher = new AckedPublisher(nc, log, ctx.pubAckTimeoutMs, () => ctx.drops?.add('duplicate_messages'));
  const consumers = new ConsumerSet();
  let closed = false;
  return {
    publish(list) {
      if (closed) return Promise.reject(new StreamUnavailableError('the event stream is closed'));
      if (!ctx.connected()) return Promise.reject(new StreamUnavailableError('NATS is disconnected'));
      const out = [];
      try {
        for (const { data, first, count } of batchMessages(encodeEvents(list), EVENTS_PER_MESSAGE, MESSAGE_BYTES, EVENT_BATCH_MARK)) {
          // The same message published again (a retried publish) is stored once.
          out.push({ subject: names.eventsSubject, data, msgId: messageIdOf(list, first, count) });
        }
      } catch (err) { return Promise.reject(err); }
      return publisher.publish(out);
    },
    consume(handler, o) {
      const maxEvents = Math.max(1, o?.maxBatch ?? DEFAULT_MAX_BATCH);
      return consumers.add(startBatchConsumer<EventRecord[]>({
        nc, connected: ctx.connected, js, stream: names.eventsStream, durable: names.eventsConsumer, log,
        // A message holds up to EVENTS_PER_MESSAGE events (about 20 under load); the handler still
        // gets at most maxBatch at once (the messages are acked after all).
        maxBatch: Math.max(1, Math.ceil(maxEvents / 20)), maxInFlight: o?.maxInFlight ?? 2,
        lingerMs: o?.lingerMs ?? ctx.lingerMs, fetchExpiresMs: ctx.fetchExpiresMs, idleFetchExpiresMs: ctx.idleFetchExpiresMs, onReconnect: ctx.onReconnect,
        // A failing writer (ClickHouse down) backs off up to 30 s between attempts.
        nakDelayMs: (count) => Math.min(30_000, 1_000 * 2 ** Math.max(0, count - 1)),
        decode: (m: JsMsg) => decodeEvents(m.data),
        async process(groups) {
          const all = groups.flat();
          for (let at = 0; at < all.length; at += maxEvents) await handler(all.slice(at, at + maxEvents));
        },
      }));
    },
    lag: () => streamLag(ctx, names.eventsStream),
    async close() {
      if (closed) return;
      closed = true;
      await consumers.closeAll();
      await publisher.close(ctx.connected());
      onClosed();
    },
  };
}
