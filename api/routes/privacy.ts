// Erasure, suppression and export of a person's data (docs/privacy.md).
import {
  erasureOut, exportProfile, exportTarget, getErasure, listErasures, requestErasure, type Eraser, type Suppressions,
} from '../../pipeline/privacy/mod.js';
import { exportExecutions } from '../../journeys/executions/mod.js';
import { notFound } from '../../http/errors.js';
import { decodeCursor, isString, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

export interface PrivacyDeps { eraser: Pick<Eraser, 'notify'>; suppressions: Pick<Suppressions, 'invalidate'> }

export function privacyRoutes(bind: Bind, d: Deps, p: PrivacyDeps) {
  bind('POST', '/v1/profiles/{id}/erase', async (req) => {
    const orgId = req.principal.orgId!;
    const suppress = req.body?.data?.suppress === true;
    const r = await requestErasure(d.pool, orgId, req.params.id, suppress);
    if ('notFound' in r) throw notFound('profile');
    if (r.created) {
      if (suppress) await p.suppressions.invalidate(orgId);
      p.eraser.notify();
      d.log.info('erasure requested', { orgId, erasureId: r.erasure.id, suppress });
    }
    return { status: 202, data: erasureOut(r.erasure) };
  });

  // Streamed: the generator is pulled as the client reads, a page of rows at a time.
  bind('GET', '/v1/profiles/{id}/export', async (req) => {
    const row = await exportTarget(d.pool, req.principal.orgId!, req.params.id);
    if (!row) throw notFound('profile');
    return {
      stream: exportProfile({ pool: d.pool, ch: d.ch, more: (org, ids) => exportExecutions(d.pool, org, ids) }, row), contentType: 'application/x-ndjson',
      headers: { 'content-disposition': `attachment; filename="profile-${row.id}.ndjson"` },
    };
  });

  bind('GET', '/v1/erasures', async (req) => {
    const q = req.query;
    const rows = await listErasures(d.pool, req.principal.orgId!, { beforeId: decodeCursor(q.cursor, isString), limit: q.limit });
    return page(rows, q.limit, (r) => r.id, erasureOut);
  });

  bind('GET', '/v1/erasures/{id}', async (req) => {
    const r = await getErasure(d.pool, req.principal.orgId!, req.params.id);
    if (!r) throw notFound('erasure');
    return { data: erasureOut(r) };
  });

  bind('GET', '/v1/suppressions', async (req) => {
    const q = req.query;
    const before = decodeCursor(q.cursor, isString);
    const r = await d.pool.query(
      `SELECT id, kind, hash, created_at, erasure_id FROM suppressions WHERE org_id = $1 AND ($2::text IS NULL OR id < $2)
       ORDER BY id DESC LIMIT $3`, [req.principal.orgId, before ?? null, q.limit + 1]);
    return page(r.rows, q.limit, (x) => x.id, (x) => ({
      id: x.id, kind: x.kind, hash: x.hash, createdAt: new Date(x.created_at).toISOString(), erasureId: x.erasure_id,
    }));
  });

  bind('DELETE', '/v1/suppressions/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    const r = await d.pool.query('DELETE FROM suppressions WHERE org_id = $1 AND id = $2', [orgId, req.params.id]);
    if (!r.rowCount) throw notFound('suppression');
    await d.pool.query('UPDATE orgs SET suppressions_version = suppressions_version + 1 WHERE id = $1', [orgId]);
    await p.suppressions.invalidate(orgId);
    return { data: { deleted: true } };
  });
}
