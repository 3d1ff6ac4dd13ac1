// The JetStream streams of one stream prefix, for tests that run servers on a shared NATS server:
// how much work is left in them, and deleting them once the servers using them are gone.
import { randomBytes } from 'node:crypto';
async function withJsm<T>(natsUrl: string, fn: (jsm: any, names: any) => Promise<T>, prefix: string): Promise<T> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const { streamNames } = await import('../../pipeline/stream/mod.js');
  const nc = await connect({ servers: natsUrl, timeout: 2_000 });
  try { return await fn(await jetstreamManager(nc), streamNames(prefix)); } finally { await nc.close(); }
}

/** Deletes the ingest and event streams of `prefix` (best effort). */
export async function deleteStreams(natsUrl: string, prefix: string): Promise<void> {
  try {
    const { deleteStreams: deleteBoth } = await import('../../pipeline/stream/mod.js');
    await withJsm(natsUrl, (jsm, names) => deleteBoth(jsm, names), prefix);
  } catch { /* best effort */ }
}

/** Messages in the ingest and event streams of `prefix` (work queues: unfinished work). */
export function streamsLeft(natsUrl: string, prefix: string): Promise<{ ingest: number; events: number }> {
  return withJsm(natsUrl, async (jsm, names) => {
    const [a, b] = await Promise.all([jsm.streams.info(names.ingestStream), jsm.streams.info(names.eventsStream)]);
    return { ingest: a.state.messages as number, events: b.state.messages as number };
  }, prefix);
}


/**
 * A stream prefix of the test's own (`letter` and random hex). With NATS_URL its streams are deleted
 * at the test's end: take it before starting the servers that use it (teardowns run last-in,
 * first-out, so the deletion comes after they closed). A server deletes only streams of a prefix it
 * made up itself.
 */
export function ownStreamPrefix(t: { teardown(fn: () => unknown): void }, letter: string): string {
  const prefix = `${letter}${randomBytes(5).toString('hex')}`;
  const url = process.env.NATS_URL;
  if (url) t.teardown(() => deleteStreams(url, prefix));
  return prefix;
}
