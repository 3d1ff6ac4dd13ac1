import type pg from 'pg';
import { newId } from '../../pipeline/ids.js';
import { httpError, notFound } from '../../http/errors.js';
import { latest, type Bind, type Deps, type RecentActivity } from './deps.js';

// A source's signing secret is write-only: it is split off the config, kept encrypted (the receiver
// must verify signatures with it, so a hash would not do) and never returned; `configured` says
// whether one is stored.
function splitSecret(config: unknown): { config: unknown; secret: string | null | undefined } {
  if (config === null || typeof config !== 'object' || Array.isArray(config) || !('signingSecret' in config)) {
    return { config, secret: undefined };
  }
  const { signingSecret, ...rest } = config as Record<string, unknown>;
  if (signingSecret !== null && (typeof signingSecret !== 'string' || signingSecret.length === 0)) {
    throw httpError('validation_failed', 'body /data/config/signingSecret: must be a non-empty string or null');
  }
  return { config: rest, secret: signingSecret as string | null };
}

export const sourceOut = (r: any, recent?: RecentActivity) => ({
  id: r.id, orgId: r.org_id, appId: r.app_id, kind: r.kind, config: r.config,
  configured: r.secret_enc !== null, lastReceivedAt: latest(r.last_received_at, recent?.source(r.id)),
  createdAt: r.created_at, updatedAt: r.updated_at, archivedAt: r.archived_at,
});

export async function insertSource(q: pg.Pool | pg.PoolClient, d: Deps, orgId: string, appId: string, kind: string, rawConfig: unknown) {
  const { config, secret } = splitSecret(rawConfig);
  const r = await q.query(`INSERT INTO sources (id, org_id, app_id, kind, config, secret_enc, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5::jsonb, $6, now(), now()) RETURNING *`,
  [newId('src'), orgId, appId, kind, JSON.stringify(config ?? {}), secret ? d.secrets.encrypt(secret) : null]);
  return r.rows[0];
}

async function getSource(d: Deps, orgId: string, id: string) {
  const r = await d.pool.query('SELECT * FROM sources WHERE org_id = $1 AND id = $2', [orgId, id]);
  if (!r.rows[0]) throw notFound('source');
  return r.rows[0];
}

export function sourceRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/sources/{id}', async (req) => ({ data: sourceOut(await getSource(d, req.principal.orgId!, req.params.id), d.recent) }));

  // Sets or rotates the config. `signingSecret`: a string stores a new secret, null removes it,
  // absent keeps the stored one.
  bind('PATCH', '/v1/sources/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    await getSource(d, orgId, req.params.id);
    const { config, secret } = splitSecret(req.body.data.config);
    const r = await d.pool.query(`UPDATE sources SET config = $3::jsonb,
        secret_enc = CASE WHEN $4::boolean THEN $5 ELSE secret_enc END, updated_at = now()
      WHERE org_id = $1 AND id = $2 RETURNING *`,
    [orgId, req.params.id, JSON.stringify(config === undefined ? null : config), secret !== undefined, secret ? d.secrets.encrypt(secret) : null]);
    return { data: sourceOut(r.rows[0], d.recent) };
  });

  bind('DELETE', '/v1/sources/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    await getSource(d, orgId, req.params.id);
    const r = await d.pool.query(`UPDATE sources SET archived_at = COALESCE(archived_at, now()), updated_at = now()
      WHERE org_id = $1 AND id = $2 RETURNING *`, [orgId, req.params.id]);
    return { data: sourceOut(r.rows[0], d.recent) };
  });
}
