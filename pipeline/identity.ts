// Identity resolution inside one Postgres transaction (OpenAPI description, "Ingestion").
// Concurrency: transaction-scoped advisory locks on every identifier of the call, taken in one
// statement in key order (no deadlock between calls), serialize calls that share an identifier;
// profile rows are then locked FOR UPDATE, and a profile found merged meanwhile restarts the
// lookup (identifiers have moved to the survivor), as PostHog does for person merges.
import type pg from 'pg';
import { newId } from './ids.js';
import { advisoryKey } from './store/postgres.js';
import type { Identifiers, IdentifierKind } from './types.js';

export const IDENTIFIER_KINDS: IdentifierKind[] = ['anonymousId', 'userId', 'idpId', 'email'];
/** Lookups restarted because a profile was merged meanwhile, before giving up. */
export const RESOLVE_ATTEMPTS = 5;

export interface ProfileRow {
  id: string; org_id: string; app_id: string; source_id: string; environment: string;
  traits: Record<string, unknown>; consent: Record<string, boolean>; merged_into: string | null;
  created_at: string; updated_at: string;
}

export interface ResolveInput {
  orgId: string; appId: string; sourceId: string; environment: string; identifiers: Identifiers; now: string;
}

/** One identifier of one (org, app), as a map key. */
export const identKey = (orgId: string, appId: string, kind: string, value: string) => `${orgId}\u0000${appId}\u0000${kind}\u0000${value}`;

/** Signed 64-bit lock key of one identifier. */
export const lockKey = (orgId: string, appId: string, kind: string, value: string) => advisoryKey(identKey(orgId, appId, kind, value));

export function pairs(ids: Identifiers): Array<[IdentifierKind, string]> {
  const out: Array<[IdentifierKind, string]> = [];
  for (const k of IDENTIFIER_KINDS) { const v = ids[k]; if (typeof v === 'string') out.push([k, v]); }
  return out;
}

/**
 * Returns the live profile the call lands on, creating or merging as needed, with the call's
 * identifiers attached (those owned by a profile that may not merge stay where they are).
 */
export async function resolveProfile(c: pg.PoolClient, inp: ResolveInput): Promise<{ profile: ProfileRow; created: boolean; merged: string[] }> {
  const ids = pairs(inp.identifiers);
  const keys = ids.map(([k, v]) => lockKey(inp.orgId, inp.appId, k, v));
  await c.query('SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k ORDER BY k', [keys]);
  const kinds = ids.map((p) => p[0]);
  const values = ids.map((p) => p[1]);

  for (let attempt = 0; attempt < RESOLVE_ATTEMPTS; attempt++) {
    const found = await c.query<{ profile_id: string }>(
      `SELECT DISTINCT profile_id FROM identifiers
       WHERE org_id = $1 AND app_id = $2 AND (kind, value) IN (SELECT * FROM unnest($3::text[], $4::text[]))`,
      [inp.orgId, inp.appId, kinds, values]);
    const candidateIds = found.rows.map((r) => r.profile_id);
    if (candidateIds.length === 0) {
      const profile = await createProfile(c, inp);
      await attach(c, inp, profile.id, { kinds, values });
      return { profile, created: true, merged: [] };
    }
    const locked = await c.query<ProfileRow>(`SELECT * FROM profiles WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [candidateIds]);
    if (locked.rows.some((p) => p.merged_into !== null) || locked.rows.length !== candidateIds.length) continue; // merged meanwhile
    const uids = await c.query<{ profile_id: string; value: string }>(
      `SELECT profile_id, value FROM identifiers WHERE profile_id = ANY($1) AND kind = 'userId'`, [candidateIds]);
    const userIdOf = new Map(uids.rows.map((r) => [r.profile_id, r.value]));
    const group = mergeGroup(locked.rows, userIdOf, inp.identifiers.userId);
    if (group.length === 0) {
      // The call's userId is new and every candidate belongs to another user: a profile of its own.
      const profile = await createProfile(c, inp);
      await attach(c, inp, profile.id, { kinds, values });
      return { profile, created: true, merged: [] };
    }
    const [survivor, ...others] = group;
    let profile = survivor!;
    if (others.length) profile = await merge(c, survivor!, others, inp.now);
    await attach(c, inp, profile.id, { kinds, values });
    return { profile, created: false, merged: others.map((o) => o.id) };
  }
  throw new Error('identity resolution did not settle after concurrent merges');
}

/**
 * Profiles that may become one: never two different userIds. With a userId in the call, the
 * profile holding it (if any) plus candidates without a userId; without one, candidates without a
 * userId plus at most the oldest candidate that has one. Oldest first.
 */
function mergeGroup(rows: ProfileRow[], userIdOf: Map<string, string>, callUserId: string | undefined): ProfileRow[] {
  const byAge = [...rows].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
  let chosenUser: string | undefined = callUserId;
  const out: ProfileRow[] = [];
  for (const p of byAge) {
    const u = userIdOf.get(p.id);
    if (u === undefined) { out.push(p); continue; }
    if (chosenUser === undefined) chosenUser = u;
    if (u === chosenUser) out.push(p);
  }
  // When the call names a userId that no candidate holds, candidates of other users were dropped.
  return out;
}

async function createProfile(c: pg.PoolClient, inp: ResolveInput): Promise<ProfileRow> {
  const r = await c.query<ProfileRow>(
    `INSERT INTO profiles (id, org_id, app_id, source_id, environment, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *`,
    [newId('prf'), inp.orgId, inp.appId, inp.sourceId, inp.environment, inp.now]);
  return r.rows[0]!;
}

async function attach(c: pg.PoolClient, inp: ResolveInput, profileId: string, ids: { kinds: string[]; values: string[] }) {
  await c.query(
    `INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
     SELECT $1, $2, k, v, $3, $4 FROM unnest($5::text[], $6::text[]) AS t(k, v)
     ON CONFLICT DO NOTHING`,
    [inp.orgId, inp.appId, profileId, inp.now, ids.kinds, ids.values]);
}

/** Folds `others` into `survivor`: identifiers move, traits and consent merge with the values of the
 * most recently updated profile winning, event history follows through `merged_into`. */
async function merge(c: pg.PoolClient, survivor: ProfileRow, others: ProfileRow[], now: string): Promise<ProfileRow> {
  const all = [survivor, ...others].sort((a, b) => (a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : 0));
  const traits: Record<string, unknown> = {};
  const consent: Record<string, boolean> = {};
  for (const p of all) { Object.assign(traits, p.traits); Object.assign(consent, p.consent); }
  const otherIds = others.map((o) => o.id);
  await c.query('UPDATE identifiers SET profile_id = $1 WHERE profile_id = ANY($2)', [survivor.id, otherIds]);
  await c.query(`UPDATE profiles SET merged_into = $1, updated_at = $3 WHERE id = ANY($2) OR merged_into = ANY($2)`, [survivor.id, otherIds, now]);
  // Segment event history follows the survivor; merged-away profiles are never members (no exit
  // events: the survivor's recompute emits the transitions of the merged profile).
  await c.query('UPDATE event_history SET profile_id = $1 WHERE profile_id = ANY($2)', [survivor.id, otherIds]);
  await c.query('DELETE FROM segment_members WHERE profile_id = ANY($1)', [otherIds]);
  const r = await c.query<ProfileRow>(
    `UPDATE profiles SET traits = $2::jsonb, consent = $3::jsonb, updated_at = $4 WHERE id = $1 RETURNING *`,
    [survivor.id, JSON.stringify(traits), JSON.stringify(consent), now]);
  return r.rows[0]!;
}

export interface IdentifierRow { kind: string; value: string; created_at: string }

/** The Profile resource of a live row and its identifiers (in created_at, kind, value order). */
export function profileResource(row: Pick<ProfileRow, 'id' | 'org_id' | 'environment' | 'app_id' | 'source_id' | 'traits' | 'consent' | 'merged_into' | 'created_at' | 'updated_at'>, ids: IdentifierRow[]) {
  return {
    id: row.id, orgId: row.org_id, environment: row.environment, appId: row.app_id, sourceId: row.source_id,
    traits: row.traits, consent: row.consent, mergedInto: row.merged_into,
    createdAt: row.created_at, updatedAt: row.updated_at,
    identifiers: ids.map((i) => ({ kind: i.kind, value: i.value, createdAt: i.created_at })),
    anonymous: ids.length > 0 && ids.every((i) => i.kind === 'anonymousId'),
  };
}

/**
 * Identifiers as the ingestion functions return them ([profileId, kind, value, createdAt], in
 * created_at, kind, value order), per profile.
 */
export function heldByProfile(held: Iterable<readonly [string, string, string, string]>): Map<string, IdentifierRow[]> {
  const out = new Map<string, IdentifierRow[]>();
  for (const [p, kind, value, created_at] of held) {
    let l = out.get(p);
    if (!l) out.set(p, (l = []));
    l.push({ kind, value, created_at });
  }
  return out;
}

/** The identifiers of each profile, each list in created_at, kind, value order (one statement). */
export async function identifiersOf(q: { query: pg.Pool['query'] }, profileIds: string[]): Promise<Map<string, IdentifierRow[]>> {
  const r = await q.query<IdentifierRow & { profile_id: string }>(
    'SELECT profile_id, kind, value, created_at FROM identifiers WHERE profile_id = ANY($1) ORDER BY created_at, kind, value', [profileIds]);
  const out = new Map<string, IdentifierRow[]>(profileIds.map((id) => [id, []]));
  for (const h of r.rows) out.get(h.profile_id)?.push({ kind: h.kind, value: h.value, created_at: h.created_at });
  return out;
}

/** The Profile resource, read. */
export async function profileOut(q: { query: pg.Pool['query'] }, row: ProfileRow) {
  return profileResource(row, (await identifiersOf(q, [row.id])).get(row.id)!);
}
