// The event hand-over on JetStream: workers publish (Nats-Msg-Id = event id, so re-emitting an
// event within the dedup window stores it once), the writer consumes and acks after its insert.
import type { JsMsg } from '@nats-io/jetstream';
import { decodeEventRecord, encodeEventRecord } from '../../schemas/avro.js';
import { startBatchConsumer } from './batch-consumer.js';
import { StreamUnavailableError } from './errors.js';
import { ConsumerSet, type JsContext } from './js-context.js';
import { AckedPublisher } from './publisher.js';
import { DEFAULT_MAX_BATCH, type EventStream } from './types.js';

export function jetStreamEvents(ctx: JsContext, onClosed: () => void): EventStream {
  const { nc, js, log, names } = ctx;
  const publisher = new AckedPublisher(nc, log, ctx.pubAckTimeoutMs);
  const consumers = new ConsumerSet();
  let closed = false;
  return {
    publish(list) {
      if (closed) return Promise.reject(new StreamUnavailableError('the event stream is closed'));
      if (!ctx.connected()) return Promise.reject(new StreamUnavailableError('NATS is disconnected'));
      let out;
      try { out = list.map((e) => ({ subject: names.eventsSubject, data: encodeEventRecord(e), msgId: e.id })); } catch (err) { return Promise.reject(err); }
      return publisher.publish(out);
    },
    consume(handler, o) {
      return consumers.add(startBatchConsumer({
        nc, connected: ctx.connected, js, stream: names.eventsStream, durable: names.eventsConsumer, log,
        maxBatch: o?.maxBatch ?? DEFAULT_MAX_BATCH, maxInFlight: o?.maxInFlight ?? 2,
        lingerMs: o?.lingerMs ?? ctx.lingerMs, fetchExpiresMs: ctx.fetchExpiresMs,
        // A failing writer (ClickHouse down) backs off up to 30 s between attempts.
        nakDelayMs: (count) => Math.min(30_000, 1_000 * 2 ** Math.max(0, count - 1)),
        decode: (m: JsMsg) => decodeEventRecord(m.data),
        process: (items) => handler(items),
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
