// Org settings (docs/architecture.md, governance): the ingestion policy, and the retention windows (docs/privacy.md).
// A policy change bumps orgs.catalog_version, since ingestion workers read the policy from the same
// snapshot as the catalog. PATCH is partial, and so is its `retention` object.
import { httpError, notFound } from '../../http/errors.js';
import { messagingOf, messagingProblem } from '../../journeys/executions/mod.js';
import { retentionOf } from '../../pipeline/privacy/mod.js';
import type { Bind, Deps } from './deps.js';

const settingsOut = (s: { ingestionPolicy?: string; retention?: Record<string, unknown>; messaging?: unknown } | null) => ({
  ingestionPolicy: s?.ingestionPolicy === 'strict' ? 'strict' : 'permissive',
  retention: retentionOf(s),
  messaging: messagingOf(s),
});

export function settingsRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/settings', async (req) => {
    const r = await d.pool.query('SELECT settings FROM orgs WHERE id = $1', [req.principal.orgId]);
    if (!r.rows[0]) throw notFound('org');
    return { data: settingsOut(r.rows[0].settings) };
  });

  bind('PATCH', '/v1/settings', async (req) => {
    const { ingestionPolicy, retention, messaging } = req.body.data;
    // What the schema cannot say: durations, times of day and IANA time zone names.
    const bad = messaging ? messagingProblem(messaging) : null;
    if (bad) throw httpError('validation_failed', bad);
    const r = await d.pool.query(
      `UPDATE orgs SET
         settings = jsonb_set(jsonb_set(settings || CASE WHEN $2::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('ingestionPolicy', $2::text) END, '{retention}',
                              COALESCE(settings->'retention', '{}'::jsonb) || $3::jsonb), '{messaging}', COALESCE(settings->'messaging', '{}'::jsonb) || $4::jsonb),
         catalog_version = catalog_version + CASE WHEN $2::text IS NULL THEN 0 ELSE 1 END
       WHERE id = $1 RETURNING settings`, [req.principal.orgId, ingestionPolicy ?? null, JSON.stringify(retention ?? {}), JSON.stringify(messaging ?? {})]);
    if (!r.rows[0]) throw notFound('org');
    return { data: settingsOut(r.rows[0].settings) };
  });
}
