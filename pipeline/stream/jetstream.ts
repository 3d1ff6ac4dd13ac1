// The two streams on NATS JetStream: streams and consumers ensured at start, connection state
// tracked for health and fast refusals, then the ingest and event sides (js-ingest, js-events).
import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../lib/log.js';
import type { DropSink } from '../drops.js';
import { jetStreamEvents } from './js-events.js';
import { jetStreamIngest } from './js-ingest.js';
import { ensureStreams, streamNames } from './setup.js';
import { DEFAULT_RESULT_TIMEOUT_MS, type EventStream, type IngestStream } from './types.js';

export interface JetStreamOptions {
  nc: NatsConnection;
  log: Logger;
  /** Counts what the streams drop on purpose (pipeline/drops.ts). */
  drops?: DropSink;
  /** Names this process's result subject `_hw.res.<nodeId>`; random by default. */
  nodeId?: string;
  resultTimeoutMs?: number;
  /** Isolated stream, subject and consumer names (tests): `{ prefix: 'T1234' }`. */
  names?: { prefix?: string };
  /** A publish not acknowledged by the stream within this is refused (503); default 2 s. */
  pubAckTimeoutMs?: number;
  /**
   * A partial batch of calls waits this long for more messages (only while a batch slot is free).
   * Default 0: it goes on the next turn of the event loop, with what one read of the socket brought.
   * A 1-ms linger added that to every call's answer while a slot was free: single track calls at 64
   * connections ran 3-9 % faster without it (two alternated pairs), batch load (both slots taken)
   * the same.
   */
  lingerMs?: number;
  /** Redelivery delay after a failed ingest batch; default 1 s. */
  nakDelayMs?: number;
  /**
   * Send Nats-Msg-Id = call id with each call. Off by default: a call is published once and never
   * re-published (a client retry comes with a new call id), so the header buys no dedup and costs
   * throughput (header building + the server's dedup map).
   */
  callMsgId?: boolean;
}

export async function createJetStreams(opts: JetStreamOptions): Promise<{ ingest: IngestStream; events: EventStream }> {
  const { nc } = opts;
  const log = opts.log.child({ component: 'stream', mode: 'jetstream' });
  const names = streamNames(opts.names?.prefix);
  const jsm = await jetstreamManager(nc);
  await ensureStreams(jsm, names);

  let connected = !nc.isClosed();
  const reconnected = new Set<() => void>();
  const status = nc.status();
  void (async () => {
    for await (const s of status) {
      if (s.type === 'disconnect') connected = false;
      else if (s.type === 'reconnect') { connected = true; for (const fn of [...reconnected]) fn(); }
    }
  })().catch(() => undefined);
  let open = 2;
  // The status iterator lives until both sides are closed (or the connection ends it).
  const onClosed = () => { if (--open === 0) (status as { stop?: () => void }).stop?.(); };

  const ctx = {
    nc, js: jetstream(nc), jsm, log, names, connected: () => connected && !nc.isClosed(),
    pubAckTimeoutMs: opts.pubAckTimeoutMs ?? 2_000, lingerMs: opts.lingerMs ?? 0,
    // The shortest the server allows for a pull with heartbeats; a stop waits for the open pulls to run
    // out (one per consumer, in turn), so this bounds how long a stop takes.
    fetchExpiresMs: 1_000,
    // An idle consumer's pull: 10 s (a heartbeat every 5 s) instead of a pull and two answers each
    // second; a close or reconnect stops it at once (batch-consumer.ts).
    idleFetchExpiresMs: 10_000,
    onReconnect: (fn: () => void) => { reconnected.add(fn); return () => { reconnected.delete(fn); }; },
    drops: opts.drops,
  };
  const ingest = jetStreamIngest(ctx, {
    replyTo: `_hw.res.${opts.nodeId ?? randomBytes(8).toString('hex')}`,
    resultTimeoutMs: opts.resultTimeoutMs ?? DEFAULT_RESULT_TIMEOUT_MS,
    nakDelayMs: opts.nakDelayMs ?? 1_000,
    callMsgId: opts.callMsgId ?? false,
  }, onClosed);
  return { ingest, events: jetStreamEvents(ctx, onClosed) };
}
