// SQL of the e-mail outbox: the enqueue (idempotent on the org's key), the claim (FOR UPDATE SKIP
// LOCKED plus a lease) and the batched write of send outcomes. Every statement stands alone (no
// transaction spans a send): embedded PGlite is one session shared by the whole process.
import type pg from 'pg';
import { newId } from '../../pipeline/ids.js';

type Q = Pick<pg.Pool, 'query'> | pg.PoolClient;

export type EmailStatus = 'pending' | 'sent' | 'failed' | 'stored';

/** An e-mail as the interface shows it. */
export interface Email {
  id: string;
  orgId: string;
  executionId: string | null;
  template: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  status: EmailStatus;
  attempts: number;
  lastError: string | null;
  /** The Message-ID header it was sent with; null until sent. */
  messageId: string | null;
  createdAt: string;
  updatedAt: string;
  sentAt: string | null;
}

export const toEmail = (r: any): Email => ({
  id: r.id, orgId: r.org_id, executionId: r.execution_id, template: r.template, to: r.to_address, subject: r.subject,
  text: r.text, html: r.html, status: r.status, attempts: r.attempts, lastError: r.last_error, messageId: r.smtp_message_id,
  createdAt: r.created_at, updatedAt: r.updated_at, sentAt: r.sent_at,
});

export interface EmailRequest {
  orgId: string;
  /** Unique per send within the org, e.g. `<executionId>:<journal position>`. */
  key: string;
  executionId: string | null;
  template: string;
  to: string;
  subject: string;
  html: string;
  text: string;
}

export interface EnqueueOptions {
  /** Whether this process has an SMTP transport (`SMTP_URL`; `EmailSender.transport`). Default true. */
  transport?: boolean;
}

/**
 * Records one e-mail: `pending` (due now) when the process has a transport, else `stored` (kept in
 * the local outbox, never sent). Idempotent on (org, key): a repeated call inserts nothing and
 * answers the first row's id with `created: false`. Call it inside the activation's transaction to
 * make the send part of it; the sender picks it up after commit.
 */
export async function enqueueEmail(client: Q, o: EmailRequest, opts: EnqueueOptions = {}): Promise<{ id: string; created: boolean }> {
  const pending = opts.transport ?? true;
  const r = await client.query(
    `INSERT INTO emails (id, org_id, execution_id, key, template, to_address, subject, html, text, status, next_attempt_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $10::text = 'pending' THEN now() END, now(), now())
     ON CONFLICT (org_id, key) DO NOTHING
     RETURNING id`,
    [newId('eml'), o.orgId, o.executionId, o.key, o.template, o.to, o.subject, o.html, o.text, pending ? 'pending' : 'stored']);
  if (r.rows[0]) return { id: r.rows[0].id, created: true };
  const e = await client.query('SELECT id FROM emails WHERE org_id = $1 AND key = $2', [o.orgId, o.key]);
  if (!e.rows[0]) throw new Error(`e-mail ${o.key} neither inserted nor found`);
  return { id: e.rows[0].id, created: false };
}

/** A claimed e-mail with what sending it needs. */
export interface Claimed { id: string; orgId: string; attempts: number; to: string; subject: string; html: string; text: string }

export interface ClaimOptions {
  limit: number;
  /** E-mails this process already holds (sending or claimed ahead), per org. */
  heldByOrg: Map<string, number>;
  perOrg: number;
  leaseMs: number;
  token: string;
}

/**
 * Takes up to `limit` due pending e-mails under a lease, at most `perOrg` held per org, round-robin
 * across orgs (each org's oldest due rows, one probe of emails_due_org per org, ranked after what
 * this process holds for the org), oldest due first within a round: one org's backlog delays
 * another org's e-mail by at most one round.
 */
export async function claim(q: Q, o: ClaimOptions): Promise<Claimed[]> {
  const orgs = [...o.heldByOrg.keys()];
  const r = await q.query(
    `WITH used AS (SELECT * FROM unnest($4::text[], $5::int[]) AS u(org_id, n)),
     cand AS (
       SELECT m.id, m.next_attempt_at, COALESCE(u.n, 0) + row_number() OVER (PARTITION BY g.id ORDER BY m.next_attempt_at, m.id) AS slot
       FROM orgs g LEFT JOIN used u ON u.org_id = g.id
       CROSS JOIN LATERAL (
         SELECT id, next_attempt_at FROM emails
         WHERE org_id = g.id AND status = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
         ORDER BY next_attempt_at LIMIT LEAST($1, GREATEST($6 - COALESCE(u.n, 0), 0))) m),
     pick AS (
       SELECT e.id FROM emails e JOIN cand c ON c.id = e.id
       WHERE c.slot <= $6 AND e.status = 'pending' AND (e.lease_until IS NULL OR e.lease_until < now())
       ORDER BY c.slot, c.next_attempt_at LIMIT $1
       FOR UPDATE OF e SKIP LOCKED)
     UPDATE emails e SET lease_until = now() + $2::int * interval '1 millisecond', lease_token = $3
     FROM pick WHERE e.id = pick.id
     RETURNING e.id, e.org_id, e.attempts, e.to_address, e.subject, e.html, e.text`,
    [o.limit, o.leaseMs, o.token, orgs, orgs.map((k) => o.heldByOrg.get(k)!), o.perOrg]);
  return r.rows.map((x) => ({ id: x.id, orgId: x.org_id, attempts: x.attempts, to: x.to_address, subject: x.subject, html: x.html, text: x.text }));
}

/** The outcome of one claimed e-mail. `release` gives the claim back without an attempt. */
export type Outcome =
  | { id: string; token: string; kind: 'sent'; messageId: string }
  | { id: string; token: string; kind: 'retry'; error: string; delayMs: number }
  | { id: string; token: string; kind: 'failed'; error: string }
  | { id: string; token: string; kind: 'release' };

/** Writes a batch of outcomes, each only where this process still holds the lease. */
export async function complete(q: Q, outcomes: Outcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  await q.query(
    `UPDATE emails e SET
       status = CASE o.kind WHEN 'sent' THEN 'sent' WHEN 'failed' THEN 'failed' ELSE 'pending' END,
       attempts = e.attempts + CASE WHEN o.kind = 'release' THEN 0 ELSE 1 END,
       last_error = CASE o.kind WHEN 'release' THEN e.last_error WHEN 'sent' THEN e.last_error ELSE o.err END,
       next_attempt_at = CASE o.kind WHEN 'retry' THEN now() + o.delay_ms * interval '1 millisecond'
                                     WHEN 'release' THEN e.next_attempt_at END,
       smtp_message_id = CASE WHEN o.kind = 'sent' THEN o.message_id ELSE e.smtp_message_id END,
       sent_at = CASE WHEN o.kind = 'sent' THEN now() ELSE e.sent_at END,
       lease_until = NULL, lease_token = NULL,
       updated_at = CASE WHEN o.kind = 'release' THEN e.updated_at ELSE now() END
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[]) AS o(id, token, kind, err, message_id, delay_ms)
     WHERE e.id = o.id AND e.lease_token = o.token AND e.status = 'pending'`,
    [outcomes.map((o) => o.id), outcomes.map((o) => o.token), outcomes.map((o) => o.kind),
      outcomes.map((o) => ('error' in o ? o.error : null)), outcomes.map((o) => (o.kind === 'sent' ? o.messageId : null)),
      outcomes.map((o) => (o.kind === 'retry' ? o.delayMs : null))]);
}

/** Milliseconds until the earliest pending e-mail falls due (its retry time, or the end of its lease), null when none. */
export async function nextDue(q: Q): Promise<number | null> {
  const r = await q.query<{ ms: number | null }>(
    `SELECT (EXTRACT(EPOCH FROM min(GREATEST(next_attempt_at, COALESCE(lease_until, next_attempt_at))) - now()) * 1000)::float8 AS ms
     FROM emails WHERE status = 'pending'`);
  return r.rows[0]?.ms ?? null;
}
