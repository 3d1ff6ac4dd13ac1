// A long-lived worker on a shared durable pull consumer: pulls up to maxBatch messages at a time,
// hands them over in batches, acknowledges each message only after its batch's side effects, and
// naks a failed batch so it comes again.
//
// Why repeated fetch() rather than consume(): consume() keeps a pull request open and issues the
// refills lazily from its iterator, so closing it strands the messages already sent to its inbox
// until ack_wait (30 s) passes, and iterating after close() sends one more pull to a dead inbox
// (measured on nats-server 2.9: 25-75 of 100 messages stuck). A fetch ends on its own (full or
// expired), so close() lets the open one run out, naks what it brought, and strands nothing. It also
// pulls only when a batch slot is free, which keeps backpressure in the stream.
import type { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../api/log.js';
import { ACK_WAIT_MS } from './setup.js';

export interface BatchConsumerOptions<T> {
  nc: NatsConnection;
  js: JetStreamClient;
  stream: string;
  durable: string;
  log: Logger;
  maxBatch: number;
  /** Batches processing at once; a new fetch starts only below this. */
  maxInFlight: number;
  /** How long a partial batch waits for more messages before it goes (latency vs batch size). */
  lingerMs: number;
  /** Lifetime of one pull request while idle (>= 1000 ms); also bounds close(). */
  fetchExpiresMs: number;
  /** Delay before a nak'ed message comes again, by its delivery count. */
  nakDelayMs: (deliveryCount: number) => number;
  decode(m: JsMsg): T;
  /** Side effects of a batch; throwing naks every message of it. */
  process(items: T[], msgs: JsMsg[]): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** ack/nak/term publish on the connection and throw once it is closed; the server then redelivers after ack_wait anyway. */
function settle(msgs: JsMsg[], how: (m: JsMsg) => void) {
  for (const m of msgs) { try { how(m); } catch { return; } }
}

export function startBatchConsumer<T>(o: BatchConsumerOptions<T>): { close(): Promise<void> } {
  let closed = false;
  const running = new Set<Promise<void>>();
  let wakeSlot: (() => void) | undefined;
  let wakeSleep: (() => void) | undefined;

  // Received, not yet handed over. A partial batch goes after `lingerMs` if a batch slot is free,
  // else when the next slot frees: batches stay small when idle and grow under load.
  let buf: JsMsg[] = [];
  let timer: NodeJS.Timeout | undefined;

  function flush(force: boolean) {
    clearTimeout(timer); timer = undefined;
    if (buf.length === 0) return;
    // Closing: hand the messages back at once so another worker takes them.
    if (closed) { settle(buf, (m) => m.nak()); buf = []; return; }
    if (!force && running.size >= o.maxInFlight) return;
    const batch = buf; buf = [];
    const p = runBatch(batch).finally(() => {
      running.delete(p);
      if (buf.length && !timer) flush(false);
      wakeSlot?.();
    });
    running.add(p);
  }

  async function runBatch(msgs: JsMsg[]) {
    // Long batches keep their messages: extend ack_wait while working (at most 5 minutes, so a hung
    // handler still lets the messages go to another worker).
    const started = Date.now();
    const hb = setInterval(() => {
      if (Date.now() - started > 5 * 60_000) { clearInterval(hb); return; }
      settle(msgs, (m) => m.working());
    }, ACK_WAIT_MS / 3);
    try {
      const items: T[] = [];
      const live: JsMsg[] = [];
      for (const m of msgs) {
        try { items.push(o.decode(m)); live.push(m); } catch (err) {
          // Unreadable forever (wrong schema): keep it in the log, not in the stream's redelivery loop.
          o.log.error('undecodable message terminated', { err, stream: o.stream, seq: m.seq, data: Buffer.from(m.data).toString('base64') });
          settle([m], (x) => x.term());
        }
      }
      if (items.length === 0) return;
      try {
        await o.process(items, live);
      } catch (err) {
        o.log.warn('batch failed; messages nak\'ed for redelivery', { err, stream: o.stream, size: live.length });
        settle(live, (m) => m.nak(o.nakDelayMs(m.info.deliveryCount)));
        return;
      }
      settle(live, (m) => m.ack());
    } finally {
      clearInterval(hb);
    }
  }

  async function collect(iter: ConsumerMessages) {
    for await (const m of iter) {
      if (closed) { settle([m], (x) => x.nak()); continue; }
      buf.push(m);
      // A fetch brings at most maxBatch messages, so forcing a full batch out keeps the bound.
      if (buf.length >= o.maxBatch) flush(true);
      else timer ??= setTimeout(() => flush(false), o.lingerMs);
    }
  }

  const loop = (async () => {
    let consumer: Consumer | undefined;
    // A closed connection never comes back (NatsConnection does not reopen): stop pulling.
    while (!closed && !o.nc.isClosed()) {
      if (running.size >= o.maxInFlight) {
        await new Promise<void>((r) => { wakeSlot = r; });
        wakeSlot = undefined;
        continue;
      }
      try {
        consumer ??= await o.js.consumers.get(o.stream, o.durable);
        await collect(await consumer.fetch({ max_messages: o.maxBatch, expires: o.fetchExpiresMs }));
      } catch (err) {
        if (closed || o.nc.isClosed()) break;
        consumer = undefined;
        o.log.warn('pulling from the stream failed; retrying', { err, stream: o.stream });
        await new Promise<void>((r) => { wakeSleep = r; void sleep(1000).then(r); });
        wakeSleep = undefined;
      }
    }
  })();

  return {
    async close() {
      if (closed) return;
      closed = true;
      wakeSlot?.(); wakeSleep?.();
      await loop;
      flush(false);
      await Promise.all([...running]);
    },
  };
}
