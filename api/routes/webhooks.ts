// Outbound webhooks: the registry (names unique per org, a signing secret shown once and kept
// encrypted), the test send and the deliveries list. Sending is the pipeline's sender.
import { enqueue, maskPassword, MASK, newSigningSecret, skipWaiting, splitPassword, toDelivery } from '../../journeys/webhooks/mod.js';
import { newId } from '../../pipeline/ids.js';
import { tx } from '../../pipeline/store/postgres.js';
import { checkQuota, lockQuota } from '../../pipeline/quotas.js';
import { isUnique } from '../../pipeline/store/errors.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, likeSubstring, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

// A URL's password is write-only: answers show it as *** (members read webhooks too).
const webhookOut = (r: any, signingSecret?: string) => ({
  id: r.id, orgId: r.org_id, name: r.name, config: { url: maskPassword(r.url, r.url_password_enc != null) }, webhookPayloadVersion: r.payload_version,
  disabledAt: r.disabled_at, createdAt: r.created_at, updatedAt: r.updated_at,
  ...(signingSecret === undefined ? {} : { signingSecret }),
});

// Postgres text cannot hold NUL; such a value is the caller's error, never a 500.
function noNul(v: string | undefined, where: string): void {
  if (v !== undefined && v.includes('\u0000')) throw httpError('validation_failed', `${where}: must not contain NUL characters`);
}

/** The schema checked the URI form and the http(s) prefix; the host must also be present. */
function checkUrl(url: string): void {
  let u: URL;
  try { u = new URL(url); } catch { throw httpError('validation_failed', 'body /data/config/url: must be an absolute http(s) URL'); }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') {
    throw httpError('validation_failed', 'body /data/config/url: must be an absolute http(s) URL with a host');
  }
}

const nameTaken = (name: string) => httpError('conflict', `a webhook named "${name}" exists`);

export interface WebhookRouteDeps { notify(): void }

export function webhookRoutes(bind: Bind, d: Deps, sender: WebhookRouteDeps) {
  const getRow = async (orgId: string, id: string) => {
    if (id.includes('\u0000')) throw notFound('webhook');
    const r = await d.pool.query('SELECT * FROM webhooks WHERE org_id = $1 AND id = $2', [orgId, id]);
    if (!r.rows[0]) throw notFound('webhook');
    return r.rows[0];
  };

  bind('POST', '/v1/webhooks', async (req) => {
    const orgId = req.principal.orgId!;
    const { name, config } = req.body.data;
    noNul(name, 'body /data/name');
    checkUrl(config.url);
    const secret = newSigningSecret();
    const { url, password } = splitPassword(config.url);
    try {
      const r = await tx(d.pool, async (c) => {
        // Under the org's webhooks lock: two creates at the limit cannot both pass.
        const limit = await lockQuota(c, orgId, 'webhooks');
        if (limit !== null) checkQuota('webhooks', limit, Number((await c.query('SELECT count(*) AS n FROM webhooks WHERE org_id = $1', [orgId])).rows[0].n), 1);
        return c.query(
          `INSERT INTO webhooks (id, org_id, name, url, url_password_enc, secret_enc, payload_version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, 1, now(), now()) RETURNING *`,
          [newId('whk'), orgId, name, url, password ? d.secrets.encrypt(password) : null, d.secrets.encrypt(secret)]);
      });
      return { status: 201, data: webhookOut(r.rows[0], secret) };
    } catch (e) {
      if (isUnique(e)) throw nameTaken(name);
      throw e;
    }
  });

  bind('GET', '/v1/webhooks', async (req) => {
    const { limit, q } = req.query;
    noNul(q, 'query /q');
    const args: unknown[] = [req.principal.orgId];
    let where = 'org_id = $1';
    if (q) { args.push(likeSubstring(q)); where += ` AND name ILIKE $${args.length}`; }
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { noNul(after, 'query /cursor'); args.push(after); where += ` AND id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(`SELECT * FROM webhooks WHERE ${where} ORDER BY id DESC LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.id, (x) => webhookOut(x));
  });

  bind('GET', '/v1/webhooks/{id}', async (req) => ({ data: webhookOut(await getRow(req.principal.orgId!, req.params.id)) }));

  bind('PATCH', '/v1/webhooks/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    const id = req.params.id;
    const before = await getRow(orgId, id);
    const body = req.body.data;
    noNul(body.name, 'body /data/name');
    if (body.config) checkUrl(body.config.url);
    // A row written before passwords were split off holds it inline: sealed on its next change.
    const legacyPassword = (stored: string) => { const p = splitPassword(stored).password; return p ? d.secrets.encrypt(p) : null; };
    // A new URL brings its own password; the mask sent back (a config round trip) keeps the stored one.
    const split = body.config ? splitPassword(body.config.url) : undefined;
    const passwordEnc = !split ? undefined
      : split.password === MASK ? before.url_password_enc ?? legacyPassword(before.url)
        : split.password ? d.secrets.encrypt(split.password) : null;
    try {
      const row = await tx(d.pool, async (c) => {
        // enabled: true resumes and forgets past failures; false disables (keeping the first disabledAt).
        const r = await c.query(
          `UPDATE webhooks SET name = COALESCE($3, name), url = COALESCE($4, url),
             url_password_enc = CASE WHEN $6::boolean THEN $7 ELSE url_password_enc END,
             disabled_at = CASE WHEN $5::boolean IS NULL THEN disabled_at WHEN $5 THEN NULL ELSE COALESCE(disabled_at, now()) END,
             consecutive_failures = CASE WHEN $5::boolean THEN 0 ELSE consecutive_failures END,
             updated_at = now()
           WHERE org_id = $1 AND id = $2 RETURNING *`,
          [orgId, id, body.name ?? null, split?.url ?? null, body.enabled ?? null, split !== undefined, passwordEnc ?? null]);
        if (!r.rows[0]) throw notFound('webhook');
        if (body.enabled === false) await skipWaiting(c, [id]);
        return r.rows[0];
      });
      if (body.enabled === true) sender.notify();
      return { data: webhookOut(row) };
    } catch (e) {
      if (isUnique(e)) throw nameTaken(body.name ?? '');
      throw e;
    }
  });

  bind('DELETE', '/v1/webhooks/{id}', async (req) => {
    const id = req.params.id;
    if (id.includes('\u0000')) throw notFound('webhook');
    const r = await d.pool.query('DELETE FROM webhooks WHERE org_id = $1 AND id = $2 RETURNING id', [req.principal.orgId, id]);
    if (!r.rows[0]) throw notFound('webhook');
    return { data: { deleted: true } };
  });

  bind('POST', '/v1/webhooks/{id}/test', async (req) => {
    const orgId = req.principal.orgId!;
    const id = req.params.id;
    if (id.includes('\u0000')) throw notFound('webhook');
    const payload = req.body.data.payload ?? {};
    const r = await enqueue(d.pool, { orgId, webhook: { id }, executionId: null, key: null, type: 'webhook.test', payload });
    if (!r.ok) throw notFound('webhook');
    sender.notify();
    return { status: 202, data: r.delivery };
  });

  bind('GET', '/v1/webhooks/{id}/deliveries', async (req) => {
    const hook = await getRow(req.principal.orgId!, req.params.id);
    const { limit } = req.query;
    const args: unknown[] = [hook.id];
    let where = 'webhook_id = $1';
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { noNul(after, 'query /cursor'); args.push(after); where += ` AND id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(
      `SELECT id, webhook_id, execution_id, status, attempts, last_status_code, last_error, created_at, updated_at
       FROM webhook_deliveries WHERE ${where} ORDER BY id DESC LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.id, toDelivery);
  });
}
