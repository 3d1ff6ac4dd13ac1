// What the JetStream ingest and event streams of one process share.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../lib/log.js';
import type { StreamNames } from './setup.js';
import type { Consumer, StreamLag } from './types.js';
import type { DropSink } from '../drops.js';

export interface JsContext {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  log: Logger;
  names: StreamNames;
  /** False between a disconnect and the reconnect. */
  connected(): boolean;
  pubAckTimeoutMs: number;
  lingerMs: number;
  /** Lifetime of a pull request while messages flow; also how long a consumer's close() may take then. */
  fetchExpiresMs: number;
  /** Lifetime of a pull request after one that brought nothing (batch-consumer.ts). */
  idleFetchExpiresMs: number;
  /** Runs `fn` after each reconnect; returns the unregister. */
  onReconnect(fn: () => void): () => void;
  /** Counts messages the stream refused as repeats. */
  drops?: DropSink;
}

/** A work-queue stream holds only unacknowledged messages: their count and the oldest one's age. */
export async function streamLag(ctx: JsContext, stream: string): Promise<StreamLag> {
  const info = await ctx.jsm.streams.info(stream);
  const first = Date.parse(info.state.first_ts);
  return { pending: info.state.messages, oldestMs: info.state.messages > 0 && Number.isFinite(first) ? Math.max(0, Date.now() - first) : 0 };
}

/** The open consumers of a stream, so that the stream's close() closes (drains) them too. */
export class ConsumerSet {
  private readonly open = new Set<Consumer>();
  add(c: Consumer): Consumer {
    this.open.add(c);
    return { close: async () => { this.open.delete(c); await c.close(); } };
  }
  async closeAll(): Promise<void> {
    const all = [...this.open];
    this.open.clear();
    await Promise.all(all.map((c) => c.close()));
  }
}
