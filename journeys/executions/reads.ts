// The profile reads of all the activations in hand, coalesced (lib/coalesce.ts): `ctx.profile.get`
// of many executions at once costs one profiles statement and one identifiers statement.
import type pg from 'pg';
import { coalesce } from '../../lib/coalesce.js';
import { identifiersOf, type IdentifierRow, type ProfileRow } from '../../pipeline/identity.js';

export interface ProfileReads {
  /** The profile, or the survivor it was merged into. */
  profile(orgId: string, profileId: string): Promise<ProfileRow | undefined>;
  /** The profile's identifiers, oldest first. */
  identifiers(profileId: string): Promise<IdentifierRow[]>;
}

export function createProfileReads(pool: pg.Pool): ProfileReads {
  const profile = coalesce<[string, string], ProfileRow | undefined>(async (keys) => {
    const r = await pool.query<ProfileRow & { headwater_at: number }>(
      `SELECT q.at AS headwater_at, p.* FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(org_id, id, at)
        JOIN LATERAL (SELECT * FROM profiles WHERE org_id = q.org_id
          AND id = COALESCE((SELECT merged_into FROM profiles WHERE org_id = q.org_id AND id = q.id), q.id)) p ON true`,
      [keys.map((k) => k[0]), keys.map((k) => k[1])]);
    const out: Array<ProfileRow | undefined> = new Array(keys.length).fill(undefined);
    for (const { headwater_at: at, ...row } of r.rows) out[Number(at) - 1] = row as ProfileRow;
    return out;
  });
  const identifiers = coalesce<string, IdentifierRow[]>(async (ids) => {
    const m = await identifiersOf(pool, [...new Set(ids)]);
    return ids.map((id) => m.get(id) ?? []);
  });
  return { profile: (orgId, profileId) => profile([orgId, profileId]), identifiers };
}
