// The event hand-over on JetStream: workers publish the events of a batch in messages of up to
// EVENTS_PER_MESSAGE (one publish, delivery and ack each, not one per event); the writer consumes
// and acks after its insert. An event emitted twice (a redelivered call's replay) is collapsed by
// ClickHouse (ReplacingMergeTree on the event id, read with FINAL).
import type { JsMsg } from '@nats-io/jetstream';
import { decodeEvents, encodeEventBatch } from '../../schemas/avro.js';
import type { EventRecord } from '../types.js';
import { startBatchConsumer } from './batch-consumer.js';
import { StreamUnavailableError } from './errors.js';
import { ConsumerSet, type JsContext } from './js-context.js';
import { AckedPublisher } from './publisher.js';
import { DEFAULT_MAX_BATCH, type EventStream } from './types.js';

/** Events per stream message (an insert slices at 10,000 rows, and maxBatch / 20 messages are read at once). */
const EVENTS_PER_MESSAGE = 100;

export function jetStreamEvents(ctx: JsContext, onClosed: () => void): EventStream {
  const { nc, js, log, names } = ctx;
  const publisher = new AckedPublisher(nc, log, ctx.pubAckTimeoutMs);
  const consumers = new ConsumerSet();
  let closed = false;
  return {
    publish(list) {
      if (closed) return Promise.reject(new StreamUnavailableError('the event stream is closed'));
      if (!ctx.connected()) return Promise.reject(new StreamUnavailableError('NATS is disconnected'));
      const out = [];
      try {
        for (let i = 0; i < list.length; i += EVENTS_PER_MESSAGE) {
          const part = list.slice(i, i + EVENTS_PER_MESSAGE);
          // The same batch published again (a retried publish) is stored once.
          out.push({ subject: names.eventsSubject, data: encodeEventBatch(part), msgId: `${part[0]!.id}+${part.length}` });
        }
      } catch (err) { return Promise.reject(err); }
      return publisher.publish(out);
    },
    consume(handler, o) {
      return consumers.add(startBatchConsumer<EventRecord[]>({
        nc, connected: ctx.connected, js, stream: names.eventsStream, durable: names.eventsConsumer, log,
        // maxBatch counts events; a message holds up to EVENTS_PER_MESSAGE, about 20 under load.
        maxBatch: Math.max(1, Math.ceil((o?.maxBatch ?? DEFAULT_MAX_BATCH) / 20)), maxInFlight: o?.maxInFlight ?? 2,
        lingerMs: o?.lingerMs ?? ctx.lingerMs, fetchExpiresMs: ctx.fetchExpiresMs,
        // A failing writer (ClickHouse down) backs off up to 30 s between attempts.
        nakDelayMs: (count) => Math.min(30_000, 1_000 * 2 ** Math.max(0, count - 1)),
        decode: (m: JsMsg) => decodeEvents(m.data),
        process: (items) => handler(items.flat()),
      }));
    },
    async close() {
      if (closed) return;
      closed = true;
      await consumers.closeAll();
      await publisher.close(ctx.connected());
      onClosed();
    },
  };
}
