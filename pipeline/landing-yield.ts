// Embedded, landing answered events yields to ingestion: both use the embedded store's one thread
// (and chDB the same cores), and landing is work nobody's answer waits for. Journeys made it
// matter: starting an execution costs ~35 us of the store's thread (its row and indexes, the
// consent and cooldown checks), so a burst of triggering events was accepted at half the rate of
// the same burst with the journey disabled. While HTTP ingestion calls stand in a queue, the event
// writer holds its next batch (the ClickHouse insert, then what landing means for journeys), at
// most until the batch's first event is `maxHoldMs` old. The batch stays unacknowledged meanwhile,
// so the landing checkpoint stays before it and a crash lands it again, as before. A burst is
// accepted at full speed and lands right after it; under sustained overload every batch is past
// its bound when it is taken, and landing shares the store with ingestion as it did without this.
/** Calls waiting for their HTTP answers, and how long the oldest has waited (ms). */
export type FrontDoorBacklog = () => { calls: number; oldestMs: number };

export interface YieldOptions {
  backlog: FrontDoorBacklog;
  /** A queue stands when the oldest waiting call has waited longer than this; default 50 ms. */
  standingMs?: number;
  /** The longest a batch waits, from its first event's receipt; default 2,000 ms. */
  maxHoldMs?: number;
  /** How long no queue must have stood before the batch lands; default 100 ms. */
  quietMs?: number;
  /** How often the backlog is looked at while waiting; default 10 ms. */
  pollMs?: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether ingestion has a standing queue now. */
function standing(o: YieldOptions): boolean {
  const b = o.backlog();
  return b.calls > 0 && b.oldestMs > (o.standingMs ?? 50);
}

/**
 * Resolves once no queue has stood at the front door for `quietMs`, or at `since + maxHoldMs` (ms
 * since the epoch) at the latest; answers how long it waited (ms). Quiet for a while, not at one
 * look: between a client's answer and its next request the queue is briefly short, and its oldest
 * call new.
 */
export async function yieldToIngestion(o: YieldOptions, since: number): Promise<number> {
  const t0 = Date.now();
  const until = since + (o.maxHoldMs ?? 2_000);
  const quietMs = o.quietMs ?? 100;
  if (t0 >= until || o.backlog().calls === 0) return 0;
  let quietSince: number | undefined;
  for (let now = t0; now < until; now = Date.now()) {
    if (standing(o)) quietSince = undefined;
    else if (quietSince === undefined) quietSince = now;
    else if (now - quietSince >= quietMs) break;
    await sleep(Math.min(o.pollMs ?? 10, until - now));
  }
  return Date.now() - t0;
}
