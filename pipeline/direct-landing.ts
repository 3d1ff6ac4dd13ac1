// A process that holds a ClickHouse client and consumes a durable ingestion stream lands the
// events of its own batches itself, instead of handing them to the event stream for the writer
// (which, in `serve`, is the same process). The batch's stream messages are acknowledged only once
// its events are in ClickHouse, so a crash before that redelivers the calls, whose replays re-emit
// the stored events (ReplacingMergeTree collapses any copy): the same guarantee as the hand-over,
// without a second trip through JetStream (encoding, a stored message, a delivery, an ack).
// Measured on 2 cores at batch load: the event stream's round trip cost the serve process and
// nats-server about a tenth of all CPU per event (docs/architecture.md).
//
// Events of several batches go out in one insert (up to maxBatch, after lingerMs at most), one
// insert at a time. When an insert (or what runs after it) fails, the waiting batches hand their
// events to the event stream instead, whose writer retries with its own backoff: ingestion keeps
// going through a ClickHouse outage without cycling the calls through redelivery.
import type { Logger } from '../lib/log.js';
import type { EventRecord } from './types.js';

export interface DirectLandingOptions {
  /** Inserts the events and runs what follows an insert (journey triggers); throws when not done. */
  land(events: EventRecord[]): Promise<void>;
  /** The durable hand-over used when `land` failed (the event stream's publish). */
  handOver(events: EventRecord[]): Promise<void>;
  /** Events per insert at most. */
  maxBatch: number;
  /** How long the first waiting event waits for an insert to fill, ms. */
  lingerMs: number;
  /** Events waiting or being inserted beyond which room() waits; default 4 x maxBatch. */
  maxPending?: number;
  log: Logger;
}

interface Waiting { events: EventRecord[]; done(err?: unknown): void }

export interface DirectLanding {
  /** Resolves once fewer than maxPending events wait (backpressure for the next batch). */
  room(): Promise<void>;
  /** Resolves once the events are in ClickHouse or durably handed over; rejects when neither. */
  land(events: EventRecord[]): Promise<void>;
  /** Events waiting for their insert or being inserted. */
  waiting(): number;
  /** Lands what waits now and resolves when nothing does. */
  close(): Promise<void>;
}

export function startDirectLanding(o: DirectLandingOptions): DirectLanding {
  const maxPending = o.maxPending ?? 4 * o.maxBatch;
  let queue: Waiting[] = [];
  let queued = 0;
  /** Events of the insert in flight. */
  let flying = 0;
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closing = false;
  let rooms: Array<() => void> = [];

  const freeRoom = () => {
    if (queued + flying >= maxPending) return;
    const r = rooms; rooms = [];
    for (const f of r) f();
  };

  async function insert(group: Waiting[]) {
    const events = group.length === 1 ? group[0]!.events : group.flatMap((w) => w.events);
    try {
      await o.land(events);
      for (const w of group) w.done();
    } catch (err) {
      o.log.warn('landing events in ClickHouse failed; handing them to the event stream', { err: String(err), events: events.length });
      // Each batch on its own: one that cannot be handed over fails alone (its calls come again).
      await Promise.all(group.map((w) => o.handOver(w.events).then(() => w.done(), (e: unknown) => w.done(e))));
    }
  }

  function flush() {
    clearTimeout(timer); timer = undefined;
    if (inFlight || queue.length === 0) return;
    // Whole batches, up to maxBatch events (a larger batch goes alone).
    let n = 0; let take = 0;
    while (take < queue.length && (take === 0 || n + queue[take]!.events.length <= o.maxBatch)) n += queue[take++]!.events.length;
    const group = queue.splice(0, take);
    queued -= n; flying = n;
    inFlight = insert(group).finally(() => {
      inFlight = undefined; flying = 0;
      freeRoom();
      if (queued >= o.maxBatch || closing) flush();
      else if (queue.length) timer ??= setTimeout(flush, o.lingerMs);
    });
  }

  return {
    room() {
      if (queued + flying < maxPending) return Promise.resolve();
      return new Promise<void>((r) => { rooms.push(r); });
    },
    land(events) {
      if (events.length === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        queue.push({ events, done: (err) => (err === undefined ? resolve() : reject(err)) });
        queued += events.length;
        if (queued >= o.maxBatch || closing) flush();
        else timer ??= setTimeout(flush, o.lingerMs);
      });
    },
    waiting: () => queued + flying,
    async close() {
      closing = true;
      for (;;) {
        flush();
        if (!inFlight) break;
        await inFlight;
      }
      for (const f of rooms) f();
      rooms = [];
    },
  };
}
