// Write keys of a source (dashboard API): the credential Segment's SDKs send with.
import { httpError, notFound } from '../../http/errors.js';
import { createWriteKey, deleteWriteKey, listWriteKeys, writeKeyOut, type WriteKeys } from '../../ingest/segment/mod.js';
import type { Bind, Deps } from './deps.js';

export function writeKeyRoutes(bind: Bind, d: Deps, keys: WriteKeys) {
  const source = async (orgId: string, id: string) => {
    const r = await d.pool.query('SELECT id, archived_at FROM sources WHERE org_id = $1 AND id = $2', [orgId, id]);
    if (!r.rows[0]) throw notFound('source');
    return r.rows[0] as { id: string; archived_at: Date | null };
  };

  bind('POST', '/v1/sources/{id}/write-keys', async (req) => {
    const orgId = req.principal.orgId!;
    const src = await source(orgId, req.params.id);
    if (src.archived_at) throw httpError('conflict', 'the source is archived; create a write key on a live source');
    const { row, key } = await createWriteKey(d.pool, orgId, src.id);
    return { status: 201, data: writeKeyOut(row, key) };
  });

  bind('GET', '/v1/sources/{id}/write-keys', async (req) => {
    const orgId = req.principal.orgId!;
    const src = await source(orgId, req.params.id);
    return { data: (await listWriteKeys(d.pool, orgId, src.id)).map((r) => writeKeyOut(r)) };
  });

  bind('DELETE', '/v1/sources/{id}/write-keys/{keyId}', async (req) => {
    const orgId = req.principal.orgId!;
    const src = await source(orgId, req.params.id);
    const hash = await deleteWriteKey(d.pool, orgId, src.id, req.params.keyId);
    if (!hash) throw notFound('write key');
    keys.forget(hash);
    return { data: { deleted: true } };
  });
}
