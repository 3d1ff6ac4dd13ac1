// Source webhook receiver (OpenAPI description, "Ingestion"): identity-provider user events signed with the Standard
// Webhooks / Svix scheme, verified with the source's stored secret in constant time, then applied
// as an identify through the same stream as every other write. Answers are plain text.
import { unstorable, unstorableString } from '../schemas/storable.js';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import type { Bind } from '../http/bind.js';
import type { Reply } from '../http/server.js';
import type { Secrets } from '../pipeline/secrets.js';
import type { CallResult, IngestCall, Identifiers } from '../pipeline/types.js';
import type { Activity } from './activity.js';

const TOLERANCE_S = 5 * 60;

const text = (status: number, body: string): Reply => ({ status, raw: body, contentType: 'text/plain; charset=utf-8' });

/** A signed delivery: its id, timestamp and signature headers, and the raw body. */
export interface SignedDelivery { id: string; timestamp: string; body: Buffer; header: string }

/** Verifies `v1,<base64>` signatures over `id.timestamp.body` with the `whsec_` secret. */
export function verifySignature(secret: string, d: SignedDelivery, nowS = Date.now() / 1000): boolean {
  const { id, timestamp, body, header } = d;
  if (!id || !timestamp || !header) return false;
  const ts = Number(timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowS - ts) > TOLERANCE_S) return false;
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const part of header.split(' ')) {
    const [version, sig] = part.split(',');
    if (version !== 'v1' || !sig) continue;
    const got = Buffer.from(sig, 'base64');
    if (got.length === expected.length && timingSafeEqual(got, expected)) return true;
  }
  return false;
}

interface ReceiverDeps {
  pool: pg.Pool;
  secrets: Secrets;
  stream: { submit(calls: IngestCall[]): Promise<CallResult[]> };
  activity: Activity;
}

export function receiverRoutes(bind: Bind, d: ReceiverDeps) {
  // Call ids must be unique per call; the provider's message id (retried deliveries, possibly at
  // once) goes into the messageId instead, which dedups.
  const prefix = `rcv.${randomBytes(6).toString('base64url')}.`;
  let seq = 0;
  bind('POST', '/v1/sources/{sourceId}/webhook', async (req) => {
    // Strings no store can hold get the receiver's own plain-text answers (schemas/storable.ts).
    if (unstorableString(req.params.sourceId)) return text(404, 'unknown source');
    const r = await d.pool.query(
      `SELECT s.id, s.org_id, s.app_id, s.archived_at, s.secret_enc, a.environment, a.status AS app_status
       FROM sources s JOIN apps a ON a.id = s.app_id WHERE s.id = $1`, [req.params.sourceId]);
    const src = r.rows[0];
    if (!src) return text(404, 'unknown source');
    if (src.archived_at || src.app_status === 'archived') return text(403, 'source archived');
    if (!src.secret_enc) return text(401, 'invalid signature');
    const h = req.headers;
    const id = h['svix-id'] ?? h['webhook-id'] ?? '';
    const ts = h['svix-timestamp'] ?? h['webhook-timestamp'] ?? '';
    const sig = h['svix-signature'] ?? h['webhook-signature'] ?? '';
    const body = req.raw ?? Buffer.alloc(0);
    if (!verifySignature(d.secrets.decrypt(src.secret_enc), { id, timestamp: ts, body, header: sig })) return text(401, 'invalid signature');
    // The id becomes the call's messageId (`webhook:<id>`, at most 200 characters like any messageId).
    if (id.length > 192 || unstorableString(id)) return text(400, 'bad payload');

    let payload: any;
    try { payload = JSON.parse(body.toString('utf8')); } catch { return text(400, 'bad payload'); }
    if (unstorable(payload)) return text(400, 'bad payload');
    const type = payload?.type;
    const user = payload?.data;
    if (!['user.created', 'user.updated', 'user.deleted'].includes(type) || typeof user?.id !== 'string' || !user.id || user.id.length > 200) {
      return text(400, 'bad payload');
    }
    const identifiers: Identifiers = { idpId: user.id };
    const traits: Record<string, unknown> = {};
    if (type === 'user.deleted') traits.deleted = true;
    else {
      const email = Array.isArray(user.email_addresses) ? user.email_addresses[0]?.email_address : undefined;
      if (typeof email === 'string' && email.length > 0 && email.length <= 200) { identifiers.email = email; traits.email = email; }
      if (typeof user.first_name === 'string') traits.firstName = user.first_name;
      if (typeof user.last_name === 'string') traits.lastName = user.last_name;
    }
    const receivedAt = Date.now();
    // The provider's message id dedups its retries like any messageId.
    const call: IngestCall = {
      id: prefix + (++seq).toString(36), kind: 'identify', orgId: src.org_id, appId: src.app_id, sourceId: src.id,
      environment: src.environment, receivedAt, body: { identifiers, traits, messageId: `webhook:${id}` },
    };
    const [res] = await d.stream.submit([call]);
    if ('error' in res!) return text(res.status, res.error.message);
    d.activity.touch(src.id, src.app_id, receivedAt);
    return text(200, 'ok');
  }, { allHeaders: true });
}
