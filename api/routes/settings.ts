// Org settings (docs/architecture.md, governance): the ingestion policy, and the retention windows (docs/privacy.md).
// A policy change bumps orgs.catalog_version, since ingestion workers read the policy from the same
// snapshot as the catalog. PATCH is partial, and so is its `retention` object.
import { notFound } from '../http/errors.js';
import { retentionOf } from '../../pipeline/privacy/mod.js';
import type { Bind, Deps } from './deps.js';

const settingsOut = (s: { ingestionPolicy?: string; retention?: Record<string, unknown> } | null) => ({
  ingestionPolicy: s?.ingestionPolicy === 'strict' ? 'strict' : 'permissive',
  retention: retentionOf(s),
});

export function settingsRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/settings', async (req) => {
    const r = await d.pool.query('SELECT settings FROM orgs WHERE id = $1', [req.principal.orgId]);
    if (!r.rows[0]) throw notFound('org');
    return { data: settingsOut(r.rows[0].settings) };
  });

  bind('PATCH', '/v1/settings', async (req) => {
    const { ingestionPolicy, retention } = req.body.data as { ingestionPolicy?: string; retention?: Record<string, number | null> };
    const r = await d.pool.query(
      `UPDATE orgs SET
         settings = jsonb_set(settings || CASE WHEN $2::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('ingestionPolicy', $2::text) END, '{retention}',
                              COALESCE(settings->'retention', '{}'::jsonb) || $3::jsonb),
         catalog_version = catalog_version + CASE WHEN $2::text IS NULL THEN 0 ELSE 1 END
       WHERE id = $1 RETURNING settings`, [req.principal.orgId, ingestionPolicy ?? null, JSON.stringify(retention ?? {})]);
    if (!r.rows[0]) throw notFound('org');
    return { data: settingsOut(r.rows[0].settings) };
  });
}
