// The delivery engine: a long-lived loop that claims due deliveries from the outbox, sends each
// outside any transaction with bounded concurrency (overall and per webhook, so one slow receiver
// holds at most its own slots), and writes the outcomes back in batches. Every process that runs
// one (serve, worker) shares the outbox; claims and leases keep two from sending one delivery at
// the same time, and a delivery left by a stopped process is taken again when its lease expires.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { claim, complete, type Claimed, type Outcome } from './store.js';
import { newAgents, post, type Attempt } from './send.js';
import { sign, signingKey } from './sign.js';

export interface SenderOptions {
  pool: pg.Pool;
  log: Logger;
  /** Reads a stored (encrypted) signing secret. */
  decrypt(stored: string): string;
  /** Attempts per delivery, the first included. */
  attempts: number;
  /** Delay before the second attempt; each later one waits 4 times longer (with +-20 % jitter). */
  backoffMs: number;
  /** Consecutive failed deliveries that disable a webhook. */
  disableAfter: number;
  timeoutMs: number;
  concurrency: number;
  perWebhook: number;
  /** How often the outbox is polled for work other processes enqueued or released. */
  pollMs: number;
  allowPrivate: boolean;
}

export interface WebhookSender {
  /** Wakes the loop (a delivery was enqueued in this process). */
  notify(): void;
  close(): Promise<void>;
}

const MAX_DELAY_MS = 24 * 3600_000;
const CLAIM_BATCH = 100;
/** How long a process keeps off a webhook whose secret it cannot read (another key). */
const UNREADABLE_MS = 60_000;
const CLOSE_GRACE_MS = 2_000;

/** Delay after failed attempt `n` (1-based): base * 4^(n-1), +-20 %, at most a day. */
export function backoffDelay(baseMs: number, n: number, random = Math.random): number {
  return Math.min(MAX_DELAY_MS, baseMs * 4 ** (n - 1)) * (0.8 + 0.4 * random());
}

/** What an attempt's result means for the delivery. */
export function outcomeOf(c: Claimed, token: string, a: Attempt, o: Pick<SenderOptions, 'attempts' | 'backoffMs'>): Outcome {
  const n = c.attempts + 1;
  if (a.kind === 'response' && a.status >= 200 && a.status < 300) return { id: c.id, token, kind: 'succeeded', statusCode: a.status };
  const statusCode = a.kind === 'response' ? a.status : null;
  const error = a.kind === 'response'
    ? `the receiver answered ${a.status}${a.status >= 300 && a.status < 400 ? ' (redirects are not followed)' : ''}`
    : a.reason;
  if (a.kind === 'refused' || n >= o.attempts) return { id: c.id, token, kind: 'failed', statusCode, error };
  const retryAfter = a.kind === 'response' ? a.retryAfterMs ?? 0 : 0;
  const delayMs = Math.min(MAX_DELAY_MS, Math.max(backoffDelay(o.backoffMs, n), retryAfter));
  return { id: c.id, token, kind: 'retry', statusCode, error, delayMs };
}

export function startWebhookSender(o: SenderOptions): WebhookSender {
  const agents = newAgents();
  const abort = new AbortController();
  // Every request in flight listens on this one signal (close() cuts them all).
  setMaxListeners(0, abort.signal);
  const inFlight = new Map<string, number>();
  const sends = new Set<Promise<void>>();
  const done: Outcome[] = [];
  const unreadable = new Map<string, number>();
  const leaseMs = o.timeoutMs + 60_000;
  let closed = false;
  let nextDue = Infinity;
  let wakeUp: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  // Set by a wake that came while a pass was running, so the loop does not sleep past it.
  let kicked = false;

  const wake = () => { kicked = true; const w = wakeUp; wakeUp = undefined; if (timer) clearTimeout(timer); w?.(); };
  const rest = (ms: number) => (kicked ? Promise.resolve() : new Promise<void>((resolve) => {
    wakeUp = resolve;
    timer = setTimeout(wake, Math.max(0, ms));
  }));

  const start = (c: Claimed, token: string) => {
    let key: Buffer;
    try { key = signingKey(o.decrypt(c.secretEnc)); } catch {
      // Another process with another HEADWATER_SECRET_KEY wrote this secret: leave it to one that can read it.
      if (!unreadable.has(c.webhookId)) o.log.warn('webhook secret unreadable in this process (HEADWATER_SECRET_KEY differs); leaving its deliveries to others', { webhookId: c.webhookId });
      unreadable.set(c.webhookId, Date.now() + UNREADABLE_MS);
      done.push({ id: c.id, token, kind: 'release' });
      return;
    }
    inFlight.set(c.webhookId, (inFlight.get(c.webhookId) ?? 0) + 1);
    const ts = Math.floor(Date.now() / 1000);
    const p = post({
      url: c.url, body: c.body, timeoutMs: o.timeoutMs, allowPrivate: o.allowPrivate, agents, signal: abort.signal,
      headers: {
        'content-type': 'application/json', 'user-agent': 'headwater-webhooks/1',
        'webhook-id': c.id, 'webhook-timestamp': String(ts), 'webhook-signature': sign(key, c.id, ts, c.body),
      },
    }).then((a) => {
      // Cut short by close(): no attempt is counted, another run sends it again.
      const out: Outcome = abort.signal.aborted && a.kind === 'error' ? { id: c.id, token, kind: 'release' } : outcomeOf(c, token, a, o);
      if (out.kind === 'retry') nextDue = Math.min(nextDue, Date.now() + out.delayMs);
      done.push(out);
    }, (err) => {
      o.log.warn('webhook send failed unexpectedly', { err: String(err) });
      done.push({ id: c.id, token, kind: 'release' });
    }).finally(() => {
      const n = inFlight.get(c.webhookId)! - 1;
      if (n === 0) inFlight.delete(c.webhookId); else inFlight.set(c.webhookId, n);
      sends.delete(p);
      wake();
    });
    sends.add(p);
  };

  const flush = async () => {
    if (done.length === 0) return;
    const batch = done.splice(0);
    try {
      const disabled = await complete(o.pool, batch, o.disableAfter);
      for (const id of disabled) o.log.warn('webhook disabled after consecutive failed deliveries', { webhookId: id, failures: o.disableAfter });
    } catch (err) {
      done.unshift(...batch);
      throw err;
    }
  };

  /** One pass: write outcomes, then claim what free slots allow. True when more may be due now. */
  const pass = async (): Promise<boolean> => {
    await flush();
    const free = o.concurrency - sends.size;
    if (free <= 0 || closed) return false;
    const now = Date.now();
    const exclude: string[] = [];
    for (const [w, n] of inFlight) if (n >= o.perWebhook) exclude.push(w);
    for (const [w, until] of unreadable) { if (until > now) exclude.push(w); else unreadable.delete(w); }
    const limit = Math.min(free, CLAIM_BATCH);
    const token = randomBytes(12).toString('base64url');
    const rows = await claim(o.pool, { limit, inFlight, perWebhook: o.perWebhook, exclude, leaseMs, token });
    for (const c of rows) start(c, token);
    return rows.length === limit;
  };

  const loop = (async () => {
    while (!closed) {
      kicked = false;
      let more = false;
      try { more = await pass(); } catch (err) { o.log.warn('webhook sender pass failed', { err: String(err) }); }
      if (closed) break;
      if (more) continue;
      const now = Date.now();
      if (nextDue <= now) nextDue = Infinity;
      await rest(Math.min(o.pollMs, nextDue - now));
      if (nextDue <= Date.now()) nextDue = Infinity;
    }
  })();

  return {
    notify: wake,
    async close() {
      if (closed) return;
      closed = true;
      wake();
      await loop;
      // Sends in flight get a moment to finish; the rest are cut and given back.
      const grace = new Promise<void>((r) => setTimeout(r, CLOSE_GRACE_MS).unref());
      await Promise.race([Promise.allSettled([...sends]), grace]);
      abort.abort();
      await Promise.allSettled([...sends]);
      await flush().catch((err) => o.log.warn('webhook outcomes not written at close; their leases expire and another run sends them again', { err: String(err) }));
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
