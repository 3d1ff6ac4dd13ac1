// How a background loop (compiler, eraser, journey runner, outbox senders, suppression lists) learns
// of work without polling for it (docs/journeys-runtime.md, "Idle").
// - Embedded, this process is the database's only user: every piece of work is made here and the
//   code that makes it wakes the loop directly, so loops rest (`soleWakes`).
// - On a PostgreSQL server shared by several processes, a process that commits work also sends
//   NOTIFY on one channel; every process LISTENs on one connection of its own and wakes its loops
//   (`listenWakes`). Loops rest while that connection is up. While it is down they poll as before,
//   and when it is back every loop looks once (a notification may have been missed meanwhile).
// Resting loops still look when the earliest lease they know of ends, and after `idleMs` at most:
// the leases of a process that died are found that way.
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../lib/log.js';

export type WakeTopic = 'compile' | 'erase' | 'journeys' | 'webhooks' | 'email' | 'suppressions';
const TOPICS: readonly WakeTopic[] = ['compile', 'erase', 'journeys', 'webhooks', 'email', 'suppressions'];

export interface Wakes {
  /** True while loops may rest: every process that makes their work tells this one. */
  readonly listening: boolean;
  /** The longest rest while listening (the safety net for other processes' leases). */
  readonly idleMs: number;
  /**
   * `fn` runs when another process tells of `topic` work, and when listening starts or stops (a
   * loop then looks once and picks its rest again). Returns the unsubscribe.
   */
  on(topic: WakeTopic, fn: () => void): () => void;
  /** This process committed `topic` work: tells the other processes (coalesced; never throws). */
  tell(topic: WakeTopic): void;
  close(): Promise<void>;
}

/**
 * What code that committed `topic` work calls: `wake` wakes this process's loop at once (other
 * processes' notifications skip their sender), then the other processes are told.
 */
export const wakeAndTell = (wakes: Wakes, topic: WakeTopic, wake: () => void) => (): void => { wake(); wakes.tell(topic); };

/**
 * The longest rest of a loop that polls every `pollMs` without notifications: `idleMs` while the
 * wakes listen (never shorter than the poll), else `pollMs`.
 */
export const longestRest = (w: Wakes, pollMs: number): number => (w.listening ? Math.max(pollMs, w.idleMs) : pollMs);

/** Embedded: loops rest up to a minute; nobody else makes work, so nothing is told. */
export function soleWakes(idleMs = 60_000): Wakes {
  return { listening: true, idleMs, on: () => () => {}, tell() {}, async close() {} };
}

/** Loops poll (no shared channel): the behaviour while a listener is down, and for tests. */
export function pollingWakes(): Wakes {
  return { listening: false, idleMs: 0, on: () => () => {}, tell() {}, async close() {} };
}

export const WAKE_CHANNEL = 'headwater_work';

export interface ListenWakesOptions {
  /** Where the LISTEN connection goes (the server the pool uses). */
  connectionString: string;
  /** Sends the NOTIFYs (one pooled statement per coalescing window). */
  pool: pg.Pool;
  log: Logger;
  /** The longest rest while listening; default 15 s. */
  idleMs?: number;
  /** Tells of one topic within this window become one NOTIFY; default 50 ms. */
  coalesceMs?: number;
  /** First reconnect delay after the LISTEN connection failed, doubled up to 10 s; default 500 ms. */
  retryMs?: number;
}

/**
 * Resolves once the first LISTEN is in place or has failed (then loops poll and it keeps trying).
 * The payload is `topic:node`, and a process ignores its own node's notifications: the code that
 * made the work woke its loops already.
 */
export async function listenWakes(o: ListenWakesOptions): Promise<Wakes> {
  const node = randomBytes(6).toString('hex');
  const idleMs = o.idleMs ?? 15_000;
  const coalesceMs = o.coalesceMs ?? 50;
  const subs = new Map<WakeTopic, Set<() => void>>(TOPICS.map((t) => [t, new Set()]));
  let listening = false;
  let closed = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryMs = o.retryMs ?? 500;
  let first = true;

  const fire = (topic: WakeTopic) => { for (const fn of subs.get(topic) ?? []) fn(); };
  const fireAll = () => { for (const t of TOPICS) fire(t); };

  const onNotification = (m: pg.Notification) => {
    const [topic, from] = (m.payload ?? '').split(':');
    if (from === node || !subs.has(topic as WakeTopic)) return;
    fire(topic as WakeTopic);
  };

  const lost = (c: pg.Client, err: unknown) => {
    if (client !== c) return;
    client = undefined;
    c.removeAllListeners('notification');
    c.end().catch(() => {});
    if (closed) return;
    // Said once per loss; the retries of an outage are debug lines.
    if (listening) {
      o.log.warn('work notifications lost; background loops poll until they are back', { err: String(err) });
      listening = false;
      fireAll();
    } else o.log.debug('work notifications still unavailable', { err: String(err) });
    retryTimer = setTimeout(() => void connect(), retryMs);
    retryTimer.unref();
    retryMs = Math.min(10_000, retryMs * 2);
  };

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: o.connectionString, application_name: 'headwater-wakes' });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', onNotification);
    try {
      await c.connect();
      await c.query(`LISTEN ${WAKE_CHANNEL}`);
    } catch (err) {
      lost(c, err);
      return;
    }
    if (closed || client !== c) return;
    retryMs = o.retryMs ?? 500;
    if (!first) o.log.info('work notifications are back; background loops rest again');
    first = false;
    listening = true;
    // Work told while nobody listened here is looked for now.
    fireAll();
  };

  const pending = new Set<WakeTopic>();
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const flush = () => {
    flushTimer = undefined;
    const topics = [...pending].map((t) => `${t}:${node}`);
    pending.clear();
    flushing = o.pool.query(`SELECT pg_notify($1, t) FROM unnest($2::text[]) AS t`, [WAKE_CHANNEL, topics])
      .then(() => undefined, (err) => o.log.debug('work notification not sent; other processes find the work when they next look', { err: String(err) }));
  };

  await connect();
  return {
    get listening() { return listening; },
    idleMs,
    on(topic, fn) {
      const s = subs.get(topic)!;
      s.add(fn);
      return () => { s.delete(fn); };
    },
    tell(topic) {
      if (closed) return;
      pending.add(topic);
      flushTimer ??= setTimeout(flush, coalesceMs);
    },
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(retryTimer);
      if (flushTimer) { clearTimeout(flushTimer); flush(); }
      await flushing;
      listening = false;
      const c = client;
      client = undefined;
      if (c) { c.removeAllListeners(); c.on('error', () => {}); await c.end().catch(() => {}); }
      for (const s of subs.values()) s.clear();
    },
  };
}

/** The wakes of a process: `soleWakes` on the embedded store, else `listenWakes` on `connectionString`. */
export async function openWakes(o: { embedded: boolean; connectionString?: string; pool: pg.Pool; log: Logger }): Promise<Wakes> {
  if (o.embedded || !o.connectionString) return soleWakes();
  return listenWakes({ connectionString: o.connectionString, pool: o.pool, log: o.log });
}
