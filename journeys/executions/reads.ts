// The profile reads of all the activations in hand, coalesced (lib/coalesce.ts): `ctx.profile.get`
// of many executions at once costs one statement, which reads each profile (or the survivor it was
// merged into) with its identifiers.
import type pg from 'pg';
import { coalesce } from '../../lib/coalesce.js';
import type { IdentifierRow, ProfileRow } from '../../pipeline/identity.js';

/** A profile with its identifiers, oldest first (the order of the Profile resource). */
export interface ProfileRead { row: ProfileRow; ids: IdentifierRow[] }

export interface ProfileReads {
  /** The profile, or the survivor it was merged into, with its identifiers. */
  profile(orgId: string, profileId: string): Promise<ProfileRead | undefined>;
}

export function createProfileReads(pool: pg.Pool): ProfileReads {
  const profile = coalesce<[string, string], ProfileRead | undefined>(async (keys) => {
    // Identifier times in the text the pool's type parser gives a timestamptz (headwater_iso).
    const r = await pool.query<ProfileRow & { headwater_at: number; headwater_ids: IdentifierRow[] }>(
      `SELECT q.at AS headwater_at, p.*,
         (SELECT COALESCE(json_agg(json_build_object('kind', i.kind, 'value', i.value, 'created_at', headwater_iso(i.created_at))
                                   ORDER BY i.created_at, i.kind, i.value), '[]')
          FROM identifiers i WHERE i.profile_id = p.id) AS headwater_ids
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(org_id, id, at)
        JOIN LATERAL (SELECT * FROM profiles WHERE org_id = q.org_id
          AND id = COALESCE((SELECT merged_into FROM profiles WHERE org_id = q.org_id AND id = q.id), q.id)) p ON true`,
      [keys.map((k) => k[0]), keys.map((k) => k[1])]);
    const out: Array<ProfileRead | undefined> = new Array(keys.length).fill(undefined);
    for (const { headwater_at: at, headwater_ids: ids, ...row } of r.rows) out[Number(at) - 1] = { row: row as ProfileRow, ids };
    return out;
  });
  return { profile: (orgId, profileId) => profile([orgId, profileId]) };
}
