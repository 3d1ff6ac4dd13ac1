// Org settings (decisions §4): the ingestion policy. A change bumps orgs.catalog_version, since
// ingestion workers read the policy from the same snapshot as the catalog.
import { notFound } from '../http/errors.js';
import type { Bind, Deps } from './deps.js';

const settingsOut = (s: { ingestionPolicy?: string } | null) => ({ ingestionPolicy: s?.ingestionPolicy === 'strict' ? 'strict' : 'permissive' });

export function settingsRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/settings', async (req) => {
    const r = await d.pool.query('SELECT settings FROM orgs WHERE id = $1', [req.principal.orgId]);
    if (!r.rows[0]) throw notFound('org');
    return { data: settingsOut(r.rows[0].settings) };
  });

  bind('PATCH', '/v1/settings', async (req) => {
    const r = await d.pool.query(
      `UPDATE orgs SET settings = settings || jsonb_build_object('ingestionPolicy', $2::text), catalog_version = catalog_version + 1
       WHERE id = $1 RETURNING settings`, [req.principal.orgId, req.body.data.ingestionPolicy]);
    if (!r.rows[0]) throw notFound('org');
    return { data: settingsOut(r.rows[0].settings) };
  });
}
