// Erasure requests and their records: the request fixes what is erased (the profile, the records
// merged into it, their identifiers) and, with `suppress`, stores the identifiers' hashes in the
// same transaction, so writes carrying them are refused from the moment the request is answered.
import type pg from 'pg';
import { newId } from '../ids.js';
import { tx } from '../store/postgres.js';
import { hashIdentifier } from './hash.js';

export interface ErasureRow {
  id: string; org_id: string; profile_id: string; profile_ids: string[]; identifiers: Array<{ kind: string; value: string }>;
  suppress: boolean; status: 'pending' | 'completed'; requested_at: Date; completed_at: Date | null;
}

export const erasureOut = (r: ErasureRow) => ({
  id: r.id, orgId: r.org_id, profileId: r.profile_id, identifiers: r.identifiers, suppress: r.suppress, status: r.status,
  requestedAt: new Date(r.requested_at).toISOString(), completedAt: r.completed_at ? new Date(r.completed_at).toISOString() : null,
});

const COLUMNS = 'id, org_id, profile_id, profile_ids, identifiers, suppress, status, requested_at, completed_at';

export type RequestResult = { notFound: true } | { erasure: ErasureRow; created: boolean };

/** Files an erasure of `profileId`; a pending one for the same profile is answered instead of a second. */
export async function requestErasure(pool: pg.Pool, orgId: string, profileId: string, suppress: boolean): Promise<RequestResult> {
  return tx(pool, async (c) => {
    const p = await c.query('SELECT id FROM profiles WHERE org_id = $1 AND id = $2 FOR UPDATE', [orgId, profileId]);
    if (!p.rows[0]) return { notFound: true };
    const pending = await c.query<ErasureRow>(`SELECT ${COLUMNS} FROM erasures WHERE org_id = $1 AND profile_id = $2 AND status = 'pending'`, [orgId, profileId]);
    if (pending.rows[0]) return { erasure: pending.rows[0], created: false };
    const merged = await c.query<{ id: string }>('SELECT id FROM profiles WHERE org_id = $1 AND merged_into = $2 ORDER BY id', [orgId, profileId]);
    const ids = [profileId, ...merged.rows.map((r) => r.id)];
    const idents = await c.query<{ kind: string; value: string }>(
      'SELECT kind, value FROM identifiers WHERE org_id = $1 AND profile_id = ANY($2) ORDER BY created_at, kind, value', [orgId, ids]);
    const id = newId('era');
    const r = await c.query<ErasureRow>(
      `INSERT INTO erasures (id, org_id, profile_id, profile_ids, identifiers, suppress, status)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, 'pending') RETURNING ${COLUMNS}`,
      [id, orgId, profileId, ids, JSON.stringify(idents.rows), suppress]);
    if (suppress && idents.rows.length) {
      const hashes = idents.rows.map((i) => hashIdentifier(i.value));
      await c.query(
        `INSERT INTO suppressions (id, org_id, kind, hash, erasure_id)
         SELECT x.id, $1, x.kind, x.hash, $2 FROM unnest($3::text[], $4::text[], $5::text[]) AS x(id, kind, hash)
         ON CONFLICT (org_id, kind, hash) DO NOTHING`,
        [orgId, id, idents.rows.map(() => newId('sup')), idents.rows.map((i) => i.kind), hashes]);
      await c.query('UPDATE orgs SET suppressions_version = suppressions_version + 1 WHERE id = $1', [orgId]);
    }
    return { erasure: r.rows[0]!, created: true };
  });
}

export async function getErasure(pool: pg.Pool, orgId: string, id: string): Promise<ErasureRow | undefined> {
  return (await pool.query<ErasureRow>(`SELECT ${COLUMNS} FROM erasures WHERE org_id = $1 AND id = $2`, [orgId, id])).rows[0];
}

/** Newest first (ids sort by time), `limit + 1` rows for the pager. */
export async function listErasures(pool: pg.Pool, orgId: string, o: { beforeId?: string; limit: number }): Promise<ErasureRow[]> {
  return (await pool.query<ErasureRow>(
    `SELECT ${COLUMNS} FROM erasures WHERE org_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [orgId, o.beforeId ?? null, o.limit + 1])).rows;
}
