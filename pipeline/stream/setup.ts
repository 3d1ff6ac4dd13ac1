// Names and idempotent creation of the JetStream streams and their shared durable consumers.
// Every process runs this at start; two starting at once must both succeed, so "already exists"
// is success and a changed configuration is applied with an update.
import { AckPolicy, DeliverPolicy, DiscardPolicy, JetStreamApiError, RetentionPolicy, StorageType,
  type ConsumerConfig, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';

export interface StreamNames {
  ingestStream: string;
  /** Calls are published to `<ingestSubject>.<orgId>`. */
  ingestSubject: string;
  ingestConsumer: string;
  eventsStream: string;
  eventsSubject: string;
  eventsConsumer: string;
}

/** The production names, or isolated ones under `prefix` (tests, side-by-side deployments). */
export function streamNames(prefix?: string): StreamNames {
  if (prefix !== undefined && !/^[A-Za-z0-9_-]+$/.test(prefix)) throw new Error(`invalid stream prefix ${JSON.stringify(prefix)}`);
  const n = (s: string) => (prefix ? `${prefix}_${s}` : s);
  const subj = (s: string) => (prefix ? `${prefix}.${s}` : s);
  return {
    ingestStream: n('HEADWATER_INGEST'), ingestSubject: subj('hw.ingest'), ingestConsumer: n('hw-ingest-workers'),
    eventsStream: n('HEADWATER_EVENTS'), eventsSubject: subj('hw.events'), eventsConsumer: n('hw-event-writers'),
  };
}

// Short enough that messages stranded by a worker's connection blip (delivered to an inbox that vanished)
// come back well inside a caller's 30 s wait; batches in progress send `working()` every third of it.
export const ACK_WAIT_MS = 10_000;

function streamConfig(name: string, subjects: string[]): Partial<StreamConfig> & { name: string } {
  return {
    name, subjects, storage: StorageType.File,
    // Work queue: a message is gone once acknowledged, so the stream holds only unfinished work.
    retention: RetentionPolicy.Workqueue,
    // When a limit is hit, refuse new messages (the front end answers 503) rather than drop
    // accepted, unprocessed ones (the default DiscardOld would).
    discard: DiscardPolicy.New,
  };
}

function consumerConfig(durable: string): Partial<ConsumerConfig> {
  return {
    durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ACK_WAIT_MS),
    // Bounds unacknowledged messages over all worker processes; each holds about two batches.
    max_ack_pending: 20_000,
  };
}

async function addOrUpdate(add: () => Promise<unknown>, update: () => Promise<unknown>) {
  try {
    await add();
  } catch (err) {
    // Identical configurations are accepted by add; a different one (older deployment) is updated.
    if (!(err instanceof JetStreamApiError)) throw err;
    await update().catch(() => { throw err; });
  }
}

export async function ensureStreams(jsm: JetStreamManager, names: StreamNames): Promise<void> {
  for (const [stream, subjects, durable] of [
    [names.ingestStream, [`${names.ingestSubject}.>`], names.ingestConsumer],
    [names.eventsStream, [names.eventsSubject], names.eventsConsumer],
  ] as const) {
    const cfg = streamConfig(stream, [...subjects]);
    await addOrUpdate(() => jsm.streams.add(cfg), () => jsm.streams.update(stream, cfg));
    const ccfg = consumerConfig(durable);
    await addOrUpdate(() => jsm.consumers.add(stream, ccfg), () => jsm.consumers.update(stream, durable, ccfg));
  }
}

/**
 * Deletes the ingest and event streams `ensureStreams` made (their consumers go with them); a stream
 * that is already gone, or a refusal, is passed over. For tools that give each run streams of its own.
 */
export async function deleteStreams(jsm: JetStreamManager, names: StreamNames): Promise<void> {
  for (const name of [names.ingestStream, names.eventsStream]) await jsm.streams.delete(name).catch(() => false);
}
