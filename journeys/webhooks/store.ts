// SQL of the delivery outbox: enqueue (idempotent on the org's key), claim (FOR UPDATE SKIP LOCKED
// plus a lease, bounded per webhook), and the batched write of attempt outcomes with the
// consecutive-failure count and auto-disable of each webhook.
import type pg from 'pg';
import { newId } from '../../pipeline/ids.js';

type Q = Pick<pg.Pool, 'query'> | pg.PoolClient;

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'skipped_disabled';

/** A delivery as the interface shows it. `id` is also the `webhook-id` header and the payload `id`. */
export interface Delivery {
  id: string;
  webhookId: string;
  executionId: string | null;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export const toDelivery = (r: any): Delivery => ({
  id: r.id, webhookId: r.webhook_id, executionId: r.execution_id, status: r.status, attempts: r.attempts,
  lastStatusCode: r.last_status_code, lastError: r.last_error, createdAt: r.created_at, updatedAt: r.updated_at,
});

export const DISABLED_REASON = 'the webhook is disabled';

export type EnqueueResult = { ok: true; delivery: Delivery; created: boolean } | { ok: false; error: 'not_found' };

export interface EnqueueInput {
  orgId: string;
  /** The webhook, by registry name (journeys) or by id (the test route). */
  webhook: { name: string } | { id: string };
  executionId: string | null;
  /** Idempotency key within the org: a repeated enqueue with the same key answers the first delivery. */
  key: string | null;
  type: string;
  payload: unknown;
}

/**
 * Records one delivery: `pending` (due now), or `skipped_disabled` when the webhook is disabled.
 * The payload is serialized once here, so every attempt sends the same bytes.
 */
export async function enqueue(q: Q, input: EnqueueInput): Promise<EnqueueResult> {
  const id = newId('msg');
  const at = new Date().toISOString();
  const body = JSON.stringify({ v: 1, id, type: input.type, timestamp: at, data: input.payload });
  const byName = 'name' in input.webhook;
  const r = await q.query(
    `INSERT INTO webhook_deliveries (id, org_id, webhook_id, execution_id, key, type, body, status, next_attempt_at, last_error, created_at, updated_at)
     SELECT $1, w.org_id, w.id, $4, $5, $6, $7,
       CASE WHEN w.disabled_at IS NULL THEN 'pending' ELSE 'skipped_disabled' END,
       CASE WHEN w.disabled_at IS NULL THEN $8::timestamptz END,
       CASE WHEN w.disabled_at IS NOT NULL THEN $9 END,
       $8, $8
     FROM webhooks w WHERE w.org_id = $2 AND ${byName ? 'w.name' : 'w.id'} = $3
     ON CONFLICT (org_id, key) WHERE key IS NOT NULL DO NOTHING
     RETURNING *`,
    [id, input.orgId, byName ? (input.webhook as { name: string }).name : (input.webhook as { id: string }).id,
      input.executionId, input.key, input.type, body, at, DISABLED_REASON]);
  if (r.rows[0]) return { ok: true, delivery: toDelivery(r.rows[0]), created: true };
  if (input.key !== null) {
    const e = await q.query('SELECT * FROM webhook_deliveries WHERE org_id = $1 AND key = $2', [input.orgId, input.key]);
    if (e.rows[0]) return { ok: true, delivery: toDelivery(e.rows[0]), created: false };
  }
  return { ok: false, error: 'not_found' };
}

/** A claimed delivery with what sending it needs. */
/** `url` without its password; `passwordEnc` the encrypted password, when the URL has one. */
export interface Claimed { id: string; orgId: string; webhookId: string; attempts: number; body: string; url: string; secretEnc: string; passwordEnc: string | null }

export interface ClaimOptions {
  limit: number;
  /** Deliveries this process already holds (in flight or claimed ahead), per webhook. */
  held: Map<string, number>;
  perWebhook: number;
  /** Deliveries this process already holds, per org. */
  heldByOrg: Map<string, number>;
  perOrg: number;
  /** Webhooks this process must not take now (full, or their secret cannot be read here). */
  exclude: string[];
  leaseMs: number;
  token: string;
}

/**
 * Takes up to `limit` due deliveries, at most `perWebhook` held per webhook and `perOrg` per org.
 * Fair across orgs: each org's oldest due rows are sampled (one probe of webhook_deliveries_due_org
 * per org, the sample bounded, so one org's backlog costs others nothing and hides nothing), and
 * rows are taken round-robin across orgs (by their rank within the org after what this process
 * already holds for it), oldest due first within a round. Rows of a disabled webhook become
 * `skipped_disabled` instead of being claimed.
 */
export async function claim(q: Q, o: ClaimOptions): Promise<Claimed[]> {
  const ids = [...o.held.keys()];
  const used = ids.map((k) => o.held.get(k)!);
  const orgs = [...o.heldByOrg.keys()];
  const r = await q.query(
    `WITH used AS (SELECT * FROM unnest($2::text[], $3::int[]) AS u(webhook_id, n)),
     used_org AS (SELECT * FROM unnest($10::text[], $11::int[]) AS u(org_id, n)),
     sample AS (
       SELECT d.id, d.org_id, d.webhook_id, d.next_attempt_at, COALESCE(uo.n, 0) AS org_used
       FROM orgs g LEFT JOIN used_org uo ON uo.org_id = g.id
       CROSS JOIN LATERAL (
         SELECT d.id, d.org_id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d
         WHERE d.org_id = g.id AND d.status = 'pending' AND d.next_attempt_at <= now()
           AND (d.lease_until IS NULL OR d.lease_until < now()) AND NOT (d.webhook_id = ANY($4::text[]))
         ORDER BY d.next_attempt_at LIMIT LEAST($5, GREATEST($12 - COALESCE(uo.n, 0), 0) * 4)) d),
     per_webhook AS (
       SELECT s.id, s.org_id, s.next_attempt_at, s.org_used,
         COALESCE(u.n, 0) + row_number() OVER (PARTITION BY s.webhook_id ORDER BY s.next_attempt_at, s.id) AS slot
       FROM sample s LEFT JOIN used u ON u.webhook_id = s.webhook_id),
     ranked AS (
       SELECT p.id, p.next_attempt_at, p.org_used + row_number() OVER (PARTITION BY p.org_id ORDER BY p.next_attempt_at, p.id) AS org_slot
       FROM per_webhook p WHERE p.slot <= $6),
     pick AS (
       SELECT d.id FROM webhook_deliveries d JOIN ranked r ON r.id = d.id
       WHERE r.org_slot <= $12 AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < now())
       ORDER BY r.org_slot, r.next_attempt_at LIMIT $1
       FOR UPDATE OF d SKIP LOCKED)
     UPDATE webhook_deliveries d SET
       status = CASE WHEN w.disabled_at IS NULL THEN 'pending' ELSE 'skipped_disabled' END,
       next_attempt_at = CASE WHEN w.disabled_at IS NULL THEN d.next_attempt_at END,
       last_error = CASE WHEN w.disabled_at IS NULL THEN d.last_error ELSE $9 END,
       updated_at = CASE WHEN w.disabled_at IS NULL THEN d.updated_at ELSE now() END,
       lease_until = CASE WHEN w.disabled_at IS NULL THEN now() + $7::int * interval '1 millisecond' END,
       lease_token = CASE WHEN w.disabled_at IS NULL THEN $8 END
     FROM pick, webhooks w WHERE d.id = pick.id AND w.id = d.webhook_id
     RETURNING d.id, d.org_id, d.webhook_id, d.attempts, d.body, d.status, w.url, w.secret_enc, w.url_password_enc`,
    [o.limit, ids, used, o.exclude, Math.max(o.limit * 4, 100), o.perWebhook, o.leaseMs, o.token, DISABLED_REASON,
      orgs, orgs.map((k) => o.heldByOrg.get(k)!), o.perOrg]);
  const out: Claimed[] = [];
  for (const x of r.rows) {
    if (x.status !== 'pending') continue;
    out.push({ id: x.id, orgId: x.org_id, webhookId: x.webhook_id, attempts: x.attempts, body: x.body, url: x.url, secretEnc: x.secret_enc, passwordEnc: x.url_password_enc ?? null });
  }
  return out;
}

/** The outcome of one claimed delivery. `release` gives the claim back without an attempt. */
export type Outcome =
  | { id: string; token: string; kind: 'succeeded'; statusCode: number }
  | { id: string; token: string; kind: 'retry'; statusCode: number | null; error: string; delayMs: number }
  | { id: string; token: string; kind: 'failed'; statusCode: number | null; error: string }
  | { id: string; token: string; kind: 'release' };

/**
 * Writes a batch of outcomes (only where the lease is still ours), then moves each touched
 * webhook's consecutive-failure count in completion order: a success resets it, a failed delivery
 * adds one, a retry leaves it. A webhook that reaches `disableAfter` is disabled and its waiting
 * deliveries become `skipped_disabled`. Returns the ids of webhooks disabled by this batch.
 */
export async function complete(q: Q, outcomes: Outcome[], disableAfter: number): Promise<string[]> {
  if (outcomes.length === 0) return [];
  const r = await q.query(
    `UPDATE webhook_deliveries d SET
       status = CASE o.kind WHEN 'retry' THEN 'pending' WHEN 'release' THEN 'pending' ELSE o.kind END,
       attempts = d.attempts + CASE WHEN o.kind = 'release' THEN 0 ELSE 1 END,
       last_status_code = CASE WHEN o.kind = 'release' THEN d.last_status_code ELSE o.code END,
       last_error = CASE WHEN o.kind = 'release' THEN d.last_error ELSE o.err END,
       next_attempt_at = CASE o.kind WHEN 'retry' THEN now() + o.delay_ms * interval '1 millisecond'
                                     WHEN 'release' THEN d.next_attempt_at END,
       lease_until = NULL, lease_token = NULL,
       updated_at = CASE WHEN o.kind = 'release' THEN d.updated_at ELSE now() END
     FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::float8[]) AS o(id, token, kind, code, err, delay_ms)
     WHERE d.id = o.id AND d.lease_token = o.token AND d.status = 'pending'
     RETURNING d.id, d.webhook_id`,
    [outcomes.map((o) => o.id), outcomes.map((o) => o.token), outcomes.map((o) => o.kind),
      outcomes.map((o) => ('statusCode' in o ? o.statusCode : null)), outcomes.map((o) => ('error' in o ? o.error : null)),
      outcomes.map((o) => (o.kind === 'retry' ? o.delayMs : null))]);
  const webhookOf = new Map<string, string>(r.rows.map((x) => [x.id as string, x.webhook_id as string]));
  // Per webhook: reset (a success happened) and failures since the last success, in order.
  const moves = new Map<string, { reset: boolean; add: number }>();
  for (const o of outcomes) {
    const w = webhookOf.get(o.id);
    if (w === undefined || (o.kind !== 'succeeded' && o.kind !== 'failed')) continue;
    const m = moves.get(w) ?? { reset: false, add: 0 };
    if (o.kind === 'succeeded') { m.reset = true; m.add = 0; } else m.add++;
    moves.set(w, m);
  }
  if (moves.size === 0) return [];
  const ws = [...moves.keys()];
  const u = await q.query(
    `WITH m AS (SELECT * FROM unnest($1::text[], $2::bool[], $3::int[]) AS m(id, reset, add)),
     n AS (SELECT w.id, CASE WHEN m.reset THEN m.add ELSE w.consecutive_failures + m.add END AS failures, w.disabled_at IS NULL AS was_enabled
           FROM webhooks w JOIN m ON m.id = w.id FOR UPDATE OF w)
     UPDATE webhooks w SET consecutive_failures = n.failures,
       disabled_at = CASE WHEN n.was_enabled AND n.failures >= $4 THEN now() ELSE w.disabled_at END,
       updated_at = CASE WHEN n.was_enabled AND n.failures >= $4 THEN now() ELSE w.updated_at END
     FROM n WHERE w.id = n.id
     RETURNING w.id, n.was_enabled AND n.failures >= $4 AS disabled_now`,
    [ws, ws.map((w) => moves.get(w)!.reset), ws.map((w) => moves.get(w)!.add), disableAfter]);
  const disabled = u.rows.filter((x) => x.disabled_now).map((x) => x.id as string);
  if (disabled.length) await skipWaiting(q, disabled);
  return disabled;
}

/** Waiting (unclaimed) deliveries of disabled webhooks become `skipped_disabled`. */
export async function skipWaiting(q: Q, webhookIds: string[]): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries d SET status = 'skipped_disabled', next_attempt_at = NULL, last_error = $2, updated_at = now()
     WHERE d.webhook_id = ANY($1::text[]) AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < now())
       AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND w.disabled_at IS NOT NULL)`,
    [webhookIds, DISABLED_REASON]);
}

/**
 * Milliseconds until the earliest pending delivery falls due (its retry time, or the end of its
 * lease), null when none; webhooks in `exclude` (this process cannot take them now) left out.
 */
export async function nextDue(q: Q, exclude: string[]): Promise<number | null> {
  const r = await q.query<{ ms: number | null }>(
    `SELECT (EXTRACT(EPOCH FROM min(GREATEST(next_attempt_at, COALESCE(lease_until, next_attempt_at))) - now()) * 1000)::float8 AS ms
     FROM webhook_deliveries WHERE status = 'pending' AND NOT (webhook_id = ANY($1::text[]))`, [exclude]);
  return r.rows[0]?.ms ?? null;
}
