// Operator routes (OpenAPI description, "Authentication"): organizations, their credentials, sessions and limits.
import { newId, newToken } from '../../pipeline/ids.js';
import { tx } from '../../pipeline/store/postgres.js';
import { hashToken } from '../../pipeline/secrets.js';
import { KEY_PREFIX, type KeyScheme } from '../auth/auth.js';
import { QUOTA_NAMES } from '../../pipeline/quotas.js';
import { DEFAULT_LIMITS } from '../../ingest/limits.js';
import { httpError, notFound } from '../../http/errors.js';
import type { Bind, Deps } from './deps.js';

export const orgOut = (r: any) => ({ id: r.id, name: r.name, createdAt: r.created_at });
export const limitsOut = (r: any) => ({ ...DEFAULT_LIMITS, ...(r.limits ?? {}) });

export function orgRoutes(bind: Bind, d: Deps) {
  bind('POST', '/v1/orgs', async (req) => {
    const id = newId('org');
    const keys: Record<KeyScheme, string> = { apiKey: newToken(KEY_PREFIX.apiKey), deployKey: newToken(KEY_PREFIX.deployKey), pipelineKey: newToken(KEY_PREFIX.pipelineKey) };
    const org = await tx(d.pool, async (c) => {
      const r = await c.query('INSERT INTO orgs (id, name) VALUES ($1, $2) RETURNING *', [id, req.body.data.name]);
      for (const [kind, token] of Object.entries(keys)) {
        await c.query('INSERT INTO credentials (hash, org_id, kind) VALUES ($1, $2, $3)', [hashToken(token), id, kind]);
      }
      return r.rows[0];
    });
    for (const [kind, token] of Object.entries(keys)) d.auth.remember(token, { scheme: kind as KeyScheme, orgId: id, role: null, userId: null });
    const admin = await d.auth.issueSession(id, 'org:admin');
    const member = await d.auth.issueSession(id, 'org:member');
    return {
      status: 201,
      data: { org: orgOut(org), apiKey: keys.apiKey, deployKey: keys.deployKey, pipelineKey: keys.pipelineKey, sessions: { admin: admin.token, member: member.token } },
    };
  });

  bind('POST', '/v1/orgs/{orgId}/sessions', async (req) => {
    const r = await d.pool.query('SELECT id FROM orgs WHERE id = $1', [req.params.orgId]);
    if (!r.rows[0]) throw notFound('org');
    const { role, userId } = req.body.data;
    const s = await d.auth.issueSession(req.params.orgId, role, userId);
    return { status: 201, data: { token: s.token, role: s.role, expiresAt: s.expiresAt } };
  });

  bind('PATCH', '/v1/orgs/{orgId}', async (req) => {
    // Checked member by member below, including what the schema cannot say.
    const limits: Record<string, unknown> = req.body.data.limits ?? {};
    for (const k of ['ratePerSecond', 'burst'] as const) {
      if (k in limits && !(typeof limits[k] === 'number' && (limits[k] as number) > 0 && Number.isFinite(limits[k]))) {
        throw httpError('validation_failed', `body /data/limits/${k}: must be a number > 0`);
      }
    }
    for (const k of ['monthlyEvents', ...QUOTA_NAMES]) {
      if (k in limits && limits[k] !== null && !(Number.isSafeInteger(limits[k]) && (limits[k] as number) >= 0)) {
        throw httpError('validation_failed', `body /data/limits/${k}: must be an integer >= 0 (at most 2^53 - 1) or null`);
      }
    }
    const picked: Record<string, unknown> = {};
    for (const k of ['ratePerSecond', 'burst', 'monthlyEvents', ...QUOTA_NAMES]) if (k in limits) picked[k] = limits[k];
    const r = await d.pool.query('UPDATE orgs SET limits = limits || $2::jsonb WHERE id = $1 RETURNING *', [req.params.orgId, JSON.stringify(picked)]);
    if (!r.rows[0]) throw notFound('org');
    return { data: { org: orgOut(r.rows[0]), limits: limitsOut(r.rows[0]) } };
  });
}

export function userRoutes(bind: Bind) {
  bind('GET', '/v1/users/me', (req) => {
    const p = req.principal;
    return { data: { orgId: p.orgId, scheme: p.scheme, role: p.role, userId: p.userId } };
  });
}
