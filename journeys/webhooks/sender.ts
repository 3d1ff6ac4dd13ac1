// The delivery engine: a long-lived loop that claims due deliveries from the outbox, sends each
// outside any transaction with bounded concurrency (overall, per org and per webhook, so one slow
// receiver holds at most its own slots and one org's receivers at most the org's share; due
// deliveries are claimed round-robin across orgs), and writes the outcomes back in batches. Every process that runs
// one (serve, worker) shares the outbox; claims and leases keep two from sending one delivery at
// the same time, and a delivery left by a stopped process is taken again when its lease expires.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import type { Wakes } from '../../pipeline/wakes.js';
import { backoffDelay, MAX_RETRY_DELAY_MS, settleSends, startPassLoop } from '../outbox/mod.js';
import { claim, complete, nextDue, type Claimed, type Outcome } from './store.js';
import { newAgents, post, type Attempt } from './send.js';
import { sign, signingKey } from './sign.js';
import { withPassword } from './url.js';

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
  /** Requests in flight per org (capped at `concurrency`); claimed ahead up to twice that. */
  perOrg: number;
  /** How often the outbox is polled while `wakes` do not listen, and the pause after a failed pass. */
  pollMs: number;
  allowPrivate: boolean;
  /** Deliveries enqueued by other processes wake it; while they listen it does not poll (outbox/loop.ts). */
  wakes: Wakes;
}

export interface WebhookSender {
  /** Wakes the loop (a delivery was enqueued in this process). */
  notify(): void;
  close(): Promise<void>;
}

const CLAIM_BATCH = 100;
/** How long a process keeps off a webhook whose secret it cannot read (another key). */
const UNREADABLE_MS = 60_000;
const CLOSE_GRACE_MS = 2_000;

interface Ready { c: Claimed; token: string; key: Buffer }

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
  const delayMs = Math.min(MAX_RETRY_DELAY_MS, Math.max(backoffDelay(o.backoffMs, n), retryAfter));
  return { id: c.id, token, kind: 'retry', statusCode, error, delayMs };
}

export function startWebhookSender(o: SenderOptions): WebhookSender {
  const agents = newAgents(o.concurrency);
  const abort = new AbortController();
  // Every request in flight listens on this one signal (close() cuts them all).
  setMaxListeners(0, abort.signal);
  // Claimed ahead (up to the concurrency again), so a finished send is followed at once by the
  // next instead of waiting for the next claim's round trip.
  const ready: Ready[] = [];
  const inFlight = new Map<string, number>();
  /** In flight + ready, per webhook: what a claim counts against the per-webhook bound. */
  const held = new Map<string, number>();
  /** The same two counts per org. */
  const inFlightOrg = new Map<string, number>();
  const heldOrg = new Map<string, number>();
  const perOrg = Math.max(1, Math.min(o.perOrg, o.concurrency));
  const sends = new Set<Promise<void>>();
  const done: Outcome[] = [];
  const unreadable = new Map<string, number>();
  const leaseMs = o.timeoutMs + 60_000;
  const bump = (m: Map<string, number>, k: string, by: number) => {
    const n = (m.get(k) ?? 0) + by;
    if (n === 0) m.delete(k); else m.set(k, n);
  };

  const send = (r: Ready) => {
    const { c, token, key } = r;
    bump(inFlight, c.webhookId, 1);
    bump(inFlightOrg, c.orgId, 1);
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
      if (out.kind === 'retry') loop.dueAt(Date.now() + out.delayMs);
      done.push(out);
    }, (err) => {
      o.log.warn('webhook send failed unexpectedly', { err: String(err) });
      done.push({ id: c.id, token, kind: 'release' });
    }).finally(() => {
      bump(inFlight, c.webhookId, -1);
      bump(held, c.webhookId, -1);
      bump(inFlightOrg, c.orgId, -1);
      bump(heldOrg, c.orgId, -1);
      sends.delete(p);
      pump();
      loop.wake();
    });
    sends.add(p);
  };

  /** Starts ready deliveries while slots allow, overall, per org and per webhook, oldest claimed first. */
  const pump = () => {
    if (loop.closed) return;
    let kept = 0;
    for (let i = 0; i < ready.length; i++) {
      const r = ready[i]!;
      if (sends.size < o.concurrency && (inFlight.get(r.c.webhookId) ?? 0) < o.perWebhook && (inFlightOrg.get(r.c.orgId) ?? 0) < perOrg) send(r);
      else ready[kept++] = r;
    }
    ready.length = kept;
  };

  /** Claimed rows become ready, their secrets decrypted once per webhook per claim. */
  const accept = (rows: Claimed[], token: string) => {
    const keys = new Map<string, Buffer>();
    for (const c of rows) {
      let key = keys.get(c.secretEnc);
      try {
        if (!key) { key = signingKey(o.decrypt(c.secretEnc)); keys.set(c.secretEnc, key); }
        if (c.passwordEnc) c.url = withPassword(c.url, o.decrypt(c.passwordEnc));
      } catch {
        // Another process with another HEADWATER_SECRET_KEY wrote this secret (or the URL's password): leave it to one that can read it.
        if (!unreadable.has(c.webhookId)) o.log.warn('webhook secret unreadable in this process (HEADWATER_SECRET_KEY differs); leaving its deliveries to others', { webhookId: c.webhookId });
        unreadable.set(c.webhookId, Date.now() + UNREADABLE_MS);
        loop.dueAt(Date.now() + UNREADABLE_MS);
        done.push({ id: c.id, token, kind: 'release' });
        continue;
      }
      bump(held, c.webhookId, 1);
      bump(heldOrg, c.orgId, 1);
      ready.push({ c, token, key });
    }
    pump();
  };

  const flush = async () => {
    if (done.length === 0) return;
    const batch = done.splice(0);
    try {
      const disabled = await complete(o.pool, batch, o.disableAfter);
      if (disabled.length) {
        for (const id of disabled) o.log.warn('webhook disabled after consecutive failed deliveries', { webhookId: id, failures: o.disableAfter });
        // Claimed ahead for a webhook just disabled: given back, so the next claim records them skipped.
        const off = new Set(disabled);
        let kept = 0;
        for (const r of ready) {
          if (off.has(r.c.webhookId)) { bump(held, r.c.webhookId, -1); bump(heldOrg, r.c.orgId, -1); done.push({ id: r.c.id, token: r.token, kind: 'release' }); } else ready[kept++] = r;
        }
        ready.length = kept;
      }
    } catch (err) {
      done.unshift(...batch);
      throw err;
    }
  };

  /**
   * One pass: write finished outcomes and claim what free room allows, the two statements at once
   * (outcomes touch only rows this process leases, claims only unleased ones). True when more may
   * be due now.
   */
  const pass = async (): Promise<boolean> => {
    const flushing = flush();
    const limit = Math.min(Math.max(2 * o.concurrency - sends.size - ready.length, 0), CLAIM_BATCH);
    const token = randomBytes(12).toString('base64url');
    let claimed: Promise<Claimed[]> = Promise.resolve([]);
    if (limit > 0 && !loop.closed) {
      const now = Date.now();
      const exclude: string[] = [];
      for (const [w, n] of held) if (n >= 2 * o.perWebhook) exclude.push(w);
      for (const [w, until] of unreadable) { if (until > now) exclude.push(w); else unreadable.delete(w); }
      claimed = claim(o.pool, { limit, held, perWebhook: 2 * o.perWebhook, heldByOrg: heldOrg, perOrg: 2 * perOrg, exclude, leaseMs, token });
    }
    const [f, c] = await Promise.allSettled([flushing, claimed]);
    let more = false;
    if (c.status === 'fulfilled') {
      accept(c.value, token);
      more = limit > 0 && c.value.length === limit;
    }
    if (f.status === 'rejected') throw f.reason;
    if (c.status === 'rejected') throw c.reason;
    return more;
  };

  const loop = startPassLoop({
    log: o.log, name: 'webhook sender', pollMs: o.pollMs, pass, wakes: o.wakes, topic: 'webhooks',
    busy: () => sends.size > 0 || ready.length > 0 || done.length > 0,
    nextDue: () => {
      const now = Date.now();
      return nextDue(o.pool, [...unreadable].filter(([, until]) => until > now).map(([w]) => w));
    },
  });

  return {
    notify: loop.wake,
    async close() {
      if (loop.closed) return;
      await loop.stop();
      // Claimed but not started: given back at once.
      for (const r of ready.splice(0)) done.push({ id: r.c.id, token: r.token, kind: 'release' });
      await settleSends(sends, CLOSE_GRACE_MS, () => abort.abort());
      await flush().catch((err) => o.log.warn('webhook outcomes not written at close; their leases expire and another run sends them again', { err: String(err) }));
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
