// A long-lived worker on a shared durable pull consumer: pulls up to maxBatch messages at a time,
// hands them over in batches, acknowledges each message only after its batch's side effects, and
// naks a failed batch so it comes again.
//
// Why repeated fetch() rather than consume(): consume() always has a pull request open and runs its
// refill pulls from inside its iterator, so closing it strands what the server already sent (or
// sends to a refill issued while draining the iterator) until ack_wait (30 s) passes: measured on
// nats-server 2.9, 25 to 75 messages stuck after closing a consume() of 100. A fetch ends on its own
// (full or expired), so close() lets an open one that is bringing messages run out, naks what it
// brought, and strands nothing; and a fetch is only issued when a batch slot is free, so
// backpressure stays in the stream.
//
// An idle consumer pulls less often: after a fetch that brought nothing, the next one lives
// `idleFetchExpiresMs` (messages still arrive the moment they are published). Each pull and each of
// its idle heartbeats cost the process and the server (an idle server pulled and parsed 6 messages
// a second for its two consumers). A fetch that has brought nothing is closed at once by close() and
// after a reconnect: the server drops a pull request whose inbox has no interest (measured on
// nats-server 2.9: a message published right after the close went to the next fetch at once), so
// only a message already on its way in the same instant could be stranded until ack_wait.
import { JetStreamError, type Consumer, type ConsumerMessages, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../lib/log.js';
import { ACK_WAIT_MS } from './setup.js';

export interface BatchConsumerOptions<T> {
  nc: NatsConnection;
  /** False while disconnected: a fetch then never ends on its own (the client pauses its heartbeat check). */
  connected(): boolean;
  js: JetStreamClient;
  stream: string;
  durable: string;
  log: Logger;
  maxBatch: number;
  /** Batches processing at once; a new fetch starts only below this. */
  maxInFlight: number;
  /**
   * How long a partial batch waits for more messages before it goes (latency vs batch size); 0: until
   * the next turn of the event loop (the messages one read of the socket brought go together).
   */
  lingerMs: number;
  /** Lifetime of one pull request while messages flow (>= 1000 ms); also bounds close() while they do. */
  fetchExpiresMs: number;
  /** Lifetime of a pull request after one that brought nothing (>= fetchExpiresMs). */
  idleFetchExpiresMs: number;
  /** Registers `fn` to run after each reconnect; returns the unregister. */
  onReconnect(fn: () => void): () => void;
  /** Delay before a nak'ed message comes again, by its delivery count. */
  nakDelayMs: (deliveryCount: number) => number;
  decode(m: JsMsg): T;
  /**
   * Side effects of a batch; throwing naks every message of it. Resolving with `after` frees the
   * batch slot at once and acknowledges the messages once `after` resolves (naks them if it rejects).
   * Messages listed in `later` were not processed: they are nak'ed at once, to come again after
   * `delayMs`, and left out of the acknowledgement.
   */
  process(items: T[], msgs: JsMsg[]): Promise<void | { after?: Promise<void>; later?: { indexes: number[]; delayMs: number } }>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The fetch was ended by the client's idle-heartbeat check (not by the server or the connection). */
const heartbeatsMissed = (err: unknown) => err instanceof JetStreamError && err.message === 'heartbeats missed';

/** ack/nak/term publish on the connection and throw once it is closed; the server then redelivers after ack_wait anyway. */
function settle(msgs: JsMsg[], how: (m: JsMsg) => void) {
  for (const m of msgs) { try { how(m); } catch { return; } }
}

export function startBatchConsumer<T>(o: BatchConsumerOptions<T>): { close(): Promise<void> } {
  let closed = false;
  const running = new Set<Promise<void>>();
  /** Batches whose work is done but whose acknowledgement waits for their `after`. */
  const settling = new Set<Promise<void>>();
  // The pull loop waiting for a batch slot, or sleeping before a retry (close() wakes it).
  const slotWaiters = new Set<() => void>();
  const sleepers = new Set<() => void>();
  const wakeAll = (set: Set<() => void>) => { for (const r of [...set]) r(); set.clear(); };
  /** Open fetches: how many messages each has brought so far, and when the last one came. */
  const open = new Map<ConsumerMessages, { got: number; lastAt: number }>();
  /**
   * Stops the fetches that brought nothing yet, and those that brought nothing for `ms` (a long
   * idle-time fetch that brought messages once): see the header. A reconnect stops only the first.
   */
  const stopQuiet = (ms: number) => { for (const [it, f] of open) if (f.got === 0 || Date.now() - f.lastAt >= ms) void it.close(); };
  const offReconnect = o.onReconnect(() => stopQuiet(Infinity));

  // Received, not yet handed over. Batches go out when maxBatch messages are waiting, or after
  // `lingerMs`, but only into a free slot (else when one frees): small batches when idle, full
  // ones under load, and never more than maxInFlight running.
  let buf: JsMsg[] = [];
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  const later = () => (o.lingerMs > 0 ? setTimeout(flush, o.lingerMs) : setImmediate(flush));

  function flush() {
    if (timer !== undefined) { if (o.lingerMs > 0) clearTimeout(timer as NodeJS.Timeout); else clearImmediate(timer as NodeJS.Immediate); }
    timer = undefined;
    // Closing: hand the messages back at once so another worker takes them.
    if (closed) { settle(buf, (m) => m.nak()); buf = []; return; }
    while (buf.length > 0 && running.size < o.maxInFlight) {
      const p = runBatch(buf.splice(0, o.maxBatch)).finally(() => {
        running.delete(p);
        flush();
        wakeAll(slotWaiters);
      });
      running.add(p);
    }
  }

  async function runBatch(msgs: JsMsg[]) {
    // Long batches keep their messages: extend ack_wait while working (at most 5 minutes, so a hung
    // handler still lets the messages go to another worker).
    const started = Date.now();
    // A message handed back must not be told "working" again: that would move its redelivery from
    // the nak's delay to ack_wait.
    let beating = msgs;
    const hb = setInterval(() => {
      if (Date.now() - started > 5 * 60_000) { clearInterval(hb); return; }
      settle(beating, (m) => m.working());
    }, ACK_WAIT_MS / 3);
    let handedOff = false;
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
      let after: Promise<void> | undefined;
      let done = live;
      try {
        const out = await o.process(items, live);
        after = out?.after;
        if (out?.later?.indexes.length) {
          const back = new Set(out.later.indexes);
          const delay = out.later.delayMs;
          settle(live.filter((_, i) => back.has(i)), (m) => m.nak(delay));
          done = live.filter((_, i) => !back.has(i));
          beating = done;
        }
      } catch (err) {
        failed(live, err);
        return;
      }
      if (!after) { settle(done, (m) => m.ack()); return; }
      handedOff = true;
      const p: Promise<void> = after.then(() => settle(done, (m) => m.ack()), (err: unknown) => failed(done, err))
        .finally(() => { clearInterval(hb); settling.delete(p); });
      settling.add(p);
    } finally {
      if (!handedOff) clearInterval(hb);
    }
  }

  function failed(live: JsMsg[], err: unknown) {
    o.log.warn('batch failed; messages nak\'ed for redelivery', { err, stream: o.stream, size: live.length });
    settle(live, (m) => m.nak(o.nakDelayMs(m.info.deliveryCount)));
  }

  /** Runs one fetch to its end; resolves with how many messages it brought. */
  async function collect(iter: ConsumerMessages, expiresMs: number): Promise<number> {
    const f = { got: 0, lastAt: Date.now() };
    open.set(iter, f);
    // A fetch ends by itself within its expiry while connected; when it does not (disconnected),
    // stop it so the loop can retry and close() cannot hang.
    const guard = setTimeout(() => void iter.close(), expiresMs + 3_000);
    try {
      for await (const m of iter) {
        f.got++;
        f.lastAt = Date.now();
        if (closed) { settle([m], (x) => x.nak()); continue; }
        buf.push(m);
        if (buf.length >= o.maxBatch) flush();
        else timer ??= later();
      }
    } finally {
      clearTimeout(guard);
      open.delete(iter);
    }
    return f.got;
  }

  /** Sleeps, but close() cuts it short. */
  async function pause(ms: number) {
    await new Promise<void>((r) => { sleepers.add(r); void sleep(ms).then(() => { sleepers.delete(r); r(); }); });
  }

  // One pull loop: a second one, overlapping round trips, split arrivals into smaller batches and
  // measured slower end to end.
  const loop = (async () => {
    let consumer: Consumer | undefined;
    let idle = false;
    // A closed connection never comes back (NatsConnection does not reopen): stop pulling.
    while (!closed && !o.nc.isClosed()) {
      // Pull only when there is room: backpressure stays in the stream.
      if (running.size >= o.maxInFlight || buf.length >= o.maxBatch) {
        await new Promise<void>((r) => { slotWaiters.add(r); });
        continue;
      }
      if (!o.connected()) {
        // A pull request buffered now would reach the server after its inbox is gone (messages
        // stranded until ack_wait): wait for the reconnect instead.
        await pause(250);
        continue;
      }
      try {
        consumer ??= await o.js.consumers.get(o.stream, o.durable);
        const expires: number = idle ? Math.max(o.fetchExpiresMs, o.idleFetchExpiresMs) : o.fetchExpiresMs;
        idle = await collect(await consumer.fetch({ max_messages: o.maxBatch, expires }), expires) === 0;
      } catch (err) {
        if (closed || o.nc.isClosed()) break;
        // The client ends a fetch after two idle heartbeats (expires / 2 each) it did not see in
        // time. Under load that happens with the connection up (a heartbeat or this event loop
        // late by a few ms), when the pull request is at its expiry anyway. Pull again at once:
        // the pause below held every call in the stream for a second (answers over 2 s at 64
        // connections in about one bench run in ten).
        if (heartbeatsMissed(err) && o.connected()) {
          o.log.debug('fetch ended on missed heartbeats; pulling again', { stream: o.stream });
          continue;
        }
        consumer = undefined;
        o.log.warn('pulling from the stream failed; retrying', { err, stream: o.stream });
        await pause(1000);
      }
    }
  })();

  return {
    async close() {
      if (closed) return;
      closed = true;
      offReconnect();
      wakeAll(slotWaiters); wakeAll(sleepers);
      // Connected, an open fetch that is bringing messages is left to run out so nothing lands in a
      // dead inbox, and one that brought nothing, or nothing for fetchExpiresMs, is stopped (see the
      // header); disconnected, nothing can arrive, so every one is stopped at once.
      let quiet: NodeJS.Timeout | undefined;
      if (!o.connected()) stopQuiet(0);
      else {
        stopQuiet(o.fetchExpiresMs);
        quiet = setInterval(() => stopQuiet(o.fetchExpiresMs), 100);
      }
      await loop.finally(() => clearInterval(quiet));
      flush();
      await Promise.all([...running]);
      await Promise.all([...settling]);
    },
  };
}
