// The e-mail sender: a long-lived loop that claims due `pending` e-mails from the outbox, hands
// each to the SMTP transport (nodemailer, pooled connections) outside any transaction, and writes
// the outcomes back in batches. Claims are round-robin across orgs and each org holds at most half
// of the sending slots, so one org's backlog or slow messages leave the rest to other orgs. Every process that runs one (serve, worker) shares the outbox;
// claims and leases keep two from sending one e-mail at the same time. Delivery towards SMTP is
// at least once: a process that dies after the server accepted a message but before recording it
// leaves the row leased; when the lease expires it is sent again with the same Message-ID header
// (derived from the row id), which is how a duplicate is recognised downstream.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import type { Wakes } from '../../pipeline/wakes.js';
import { backoffDelay, settleSends, startPassLoop } from '../outbox/mod.js';
import { claim, complete, nextDue, type Claimed, type Outcome } from './store.js';

export interface EmailSenderOptions {
  pool: pg.Pool;
  log: Logger;
  /** SMTP transport URL (`smtp://user:pass@host:587`, `smtps://...`). Unset: e-mails are `stored`, never sent. */
  smtpUrl?: string;
  /** The From address of every e-mail. */
  from: string;
  /** Attempts per e-mail, the first included (default 5). */
  maxAttempts?: number;
  /** Delay before the second attempt; each later one waits 4 times longer (+-20 %, at most a day). Default 30 s. */
  retryBaseMs?: number;
  /** How often the outbox is polled while `wakes` do not listen (default 1 s), and the pause after a failed pass. */
  pollMs?: number;
  /** E-mails enqueued by other processes wake it; while they listen it does not poll (outbox/loop.ts). */
  wakes: Wakes;
  /** Messages handed to the transport at once per process (also its pooled SMTP connections; default 4). */
  concurrency?: number;
  /** How long a claim is held; a send cut by a crash is taken again after it (default 10 min). */
  leaseMs?: number;
}

export interface EmailSender {
  /** Whether this process has a transport: pass it to `enqueueEmail` (`pending` or `stored`). */
  readonly transport: boolean;
  /** Wakes the loop (an e-mail was enqueued in this process). */
  notify(): void;
  close(): Promise<void>;
}

const CLOSE_GRACE_MS = 2_000;
/** The share of the sending slots one org may hold (at least one slot). */
const ORG_SHARE = 0.5;

/** `<eml_...@domain-of-from>`: the same on every attempt of one e-mail. */
export function messageIdOf(id: string, from: string): string {
  const m = /@([^\s>]+)>?\s*$/.exec(from);
  return `<${id}@${m?.[1] ?? 'headwater.localhost'}>`;
}

interface SmtpError { code?: string; responseCode?: number; response?: string; message?: string }

/** A 5xx answer (or a message nodemailer cannot build) fails at once; anything else is retried. */
export function isPermanent(e: SmtpError): boolean {
  if (typeof e.responseCode === 'number') return e.responseCode >= 500 && e.responseCode < 600 && e.code !== 'EAUTH';
  return e.code === 'EENVELOPE' || e.code === 'EMESSAGE';
}

const reasonOf = (e: SmtpError) => (e.response ? `${e.code ?? 'SMTP'}: ${e.response}` : e.code && e.message && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : (e.message ?? String(e)));

/** Starts the sender; without `smtpUrl` it does nothing (this process's e-mails are `stored`). */
export function startEmailSender(o: EmailSenderOptions): EmailSender {
  if (!o.smtpUrl) return { transport: false, notify() {}, async close() {} };

  const maxAttempts = Math.max(1, o.maxAttempts ?? 5);
  const retryBaseMs = o.retryBaseMs ?? 30_000;
  const pollMs = Math.max(1, o.pollMs ?? 1000);
  const concurrency = Math.max(1, o.concurrency ?? 4);
  const leaseMs = o.leaseMs ?? 10 * 60_000;
  const perOrg = Math.max(1, Math.floor(concurrency * ORG_SHARE));
  /** Sending, and held (sending + claimed ahead), per org. */
  const sendingOrg = new Map<string, number>();
  const heldOrg = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string, by: number) => {
    const n = (m.get(k) ?? 0) + by;
    if (n <= 0) m.delete(k); else m.set(k, n);
  };
  // Bounded waits, so a silent server fails an attempt long before the lease runs out.
  const transport = nodemailer.createTransport({
    url: o.smtpUrl, pool: true, maxConnections: concurrency,
    connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 60_000,
  } as any);
  const sends = new Set<Promise<void>>();
  // Every send in flight listens on this one signal: close() cuts them all (nodemailer fails the
  // message and closes its connection).
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  // Claimed ahead (up to the concurrency again), so a finished send is followed at once by the
  // next instead of waiting for a claim's round trip, and claims and outcome writes are batched.
  const ready: Array<{ c: Claimed; token: string }> = [];
  const done: Outcome[] = [];

  const outcomeOf = (c: Claimed, token: string, err: SmtpError): Outcome => {
    const n = c.attempts + 1;
    const error = reasonOf(err);
    if (isPermanent(err) || n >= maxAttempts) return { id: c.id, token, kind: 'failed', error };
    const delayMs = backoffDelay(retryBaseMs, n);
    loop.dueAt(Date.now() + delayMs);
    return { id: c.id, token, kind: 'retry', error, delayMs };
  };

  const send = (c: Claimed, token: string) => {
    const messageId = messageIdOf(c.id, o.from);
    bump(sendingOrg, c.orgId, 1);
    const p = transport.sendMail({
      from: o.from, to: c.to, subject: c.subject, text: c.text, ...(c.html ? { html: c.html } : {}), messageId, signal: abort.signal,
    }).then(
      () => { done.push({ id: c.id, token, kind: 'sent', messageId }); },
      // Cut by close(): no attempt counted; the next run sends it again.
      (err) => { done.push(loop.closed ? { id: c.id, token, kind: 'release' } : outcomeOf(c, token, err as SmtpError)); },
    ).finally(() => { bump(sendingOrg, c.orgId, -1); bump(heldOrg, c.orgId, -1); sends.delete(p); pump(); loop.wake(); });
    sends.add(p);
  };

  /** Starts ready e-mails while slots allow, overall and per org, oldest claimed first. */
  const pump = () => {
    if (loop.closed) return;
    let kept = 0;
    for (let i = 0; i < ready.length; i++) {
      const r = ready[i]!;
      if (sends.size < concurrency && (sendingOrg.get(r.c.orgId) ?? 0) < perOrg) send(r.c, r.token);
      else ready[kept++] = r;
    }
    ready.length = kept;
  };

  /**
   * One pass: write finished outcomes and claim when less than a round of work is ready (then
   * enough for two). Outcomes wait for the next claim (or for the last send to end), so both are
   * written in batches. True when more may be due now and there is room to take it.
   */
  const pass = async (): Promise<boolean> => {
    const claimNow = !loop.closed && ready.length < concurrency;
    if (done.length && (claimNow || sends.size === 0 || done.length >= concurrency)) {
      const batch = done.splice(0);
      try { await complete(o.pool, batch); } catch (err) { done.unshift(...batch); throw err; }
    }
    const limit = 2 * concurrency - sends.size - ready.length;
    if (!claimNow || limit <= 0) return false;
    const token = randomBytes(12).toString('base64url');
    const rows = await claim(o.pool, { limit, heldByOrg: heldOrg, perOrg: 2 * perOrg, leaseMs, token });
    for (const c of rows) { bump(heldOrg, c.orgId, 1); ready.push({ c, token }); }
    pump();
    return rows.length === limit && ready.length < concurrency;
  };

  const loop = startPassLoop({
    log: o.log, name: 'e-mail sender', pollMs, pass, wakes: o.wakes, topic: 'email',
    busy: () => sends.size > 0 || ready.length > 0 || done.length > 0, nextDue: () => nextDue(o.pool),
  });

  return {
    transport: true,
    notify: loop.wake,
    async close() {
      if (loop.closed) return;
      await loop.stop();
      // Claimed but not started: given back at once.
      for (const r of ready.splice(0)) done.push({ id: r.c.id, token: r.token, kind: 'release' });
      // The rest are cut (closing the pool fails them) and given back.
      await settleSends(sends, CLOSE_GRACE_MS, () => { abort.abort(); transport.close({ force: true } as never); });
      await complete(o.pool, done.splice(0)).catch((err) => o.log.warn('e-mail outcomes not written at close; their leases expire and another run sends them again', { err: String(err) }));
    },
  };
}
