// Pushes and versions. A push stores the project's manifest and files a version for every journey
// or template key whose bundle differs from the latest version of that key (keys are unique per org
// and kind); an unchanged key files none. An org's pushes are serialized on its counter row, so two
// pushes at once cannot both file a version for the same change. A push that would create journeys
// past the org's journeys quota is refused whole (pipeline/quotas.ts).
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { newId } from '../../pipeline/ids.js';
import { checkQuota, lockQuota } from '../../pipeline/quotas.js';
import { tx } from '../../pipeline/store/postgres.js';
import { missingArtifacts } from './artifacts.js';

export interface EntryInput { key: string; bundle: string; [k: string]: unknown }
export interface ManifestInput {
  protocol: number; sdk: string; source: string;
  journeys: EntryInput[]; templates: EntryInput[]; purposes?: unknown[];
  [k: string]: unknown;
}

/** JSON with object members in sorted order: the same manifest always has the same digest. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

/**
 * What the schema cannot check: keys unique per kind within the manifest, the app belongs to the
 * org, and every digest names a stored artifact of the org. Each problem as `pointer: message`.
 */
export async function manifestProblems(pool: pg.Pool, orgId: string, appId: string, m: ManifestInput): Promise<string[]> {
  const problems: string[] = [];
  const app = await pool.query<{ status: string }>('SELECT status FROM apps WHERE org_id = $1 AND id = $2', [orgId, appId]);
  if (!app.rows[0]) problems.push('/data/appId: is not an app of this org');
  else if (app.rows[0].status === 'archived') problems.push('/data/appId: the app is archived');
  for (const kind of ['journeys', 'templates'] as const) {
    const seen = new Set<string>();
    m[kind].forEach((e, i) => {
      if (seen.has(e.key)) problems.push(`/data/manifest/${kind}/${i}/key: ${JSON.stringify(e.key)} appears twice`);
      seen.add(e.key);
    });
  }
  const refs: Array<[string, string]> = [['/data/manifest/source', m.source]];
  for (const kind of ['journeys', 'templates'] as const) m[kind].forEach((e, i) => refs.push([`/data/manifest/${kind}/${i}/bundle`, e.bundle]));
  const missing = await missingArtifacts(pool, orgId, refs.map((r) => r[1]));
  for (const [ptr, digest] of refs) if (missing.has(digest)) problems.push(`${ptr}: artifact ${JSON.stringify(digest)} is not stored`);
  return problems;
}

export interface CreatePush {
  orgId: string; appId: string; manifest: ManifestInput;
  /** The session's user id, or `pipelineKey`; the credential kind and the session's role beside it. */
  createdBy: string; createdByScheme: 'session' | 'pipelineKey'; createdByRole: 'org:admin' | 'org:member' | null;
}

/** Stores the push and its versions (status `compiling`) in one transaction; returns the push id. */
export async function createPush(pool: pg.Pool, p: CreatePush): Promise<{ id: string; versions: number }> {
  const manifestDigest = createHash('sha256').update(canonicalJson(p.manifest)).digest('hex');
  const id = newId('psh');
  return tx(pool, async (c) => {
    const seqRow = await c.query<{ push_seq: number }>('UPDATE orgs SET push_seq = push_seq + 1 WHERE id = $1 RETURNING push_seq', [p.orgId]);
    const seq = seqRow.rows[0]!.push_seq;
    await checkJourneyQuota(c, p.orgId, p.manifest.journeys.map((e) => e.key));
    await c.query(
      `INSERT INTO pushes (id, org_id, app_id, seq, manifest, manifest_digest, source_digest, created_by, created_by_scheme, created_by_role, created_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, now())`,
      [id, p.orgId, p.appId, seq, JSON.stringify(p.manifest), manifestDigest, p.manifest.source, p.createdBy, p.createdByScheme, p.createdByRole]);
    const entries = [
      ...p.manifest.journeys.map((e) => ({ kind: 'journey', e })),
      ...p.manifest.templates.map((e) => ({ kind: 'template', e })),
    ];
    if (entries.length === 0) return { id, versions: 0 };
    const latest = await c.query<{ kind: string; key: string; bundle_digest: string }>(
      `SELECT DISTINCT ON (kind, key) kind, key, bundle_digest FROM versions
       WHERE org_id = $1 AND key = ANY($2::text[]) ORDER BY kind, key, push_seq DESC`,
      [p.orgId, [...new Set(entries.map((x) => x.e.key))]]);
    const last = new Map(latest.rows.map((r) => [`${r.kind}\u0000${r.key}`, r.bundle_digest]));
    const changed = entries.filter((x) => last.get(`${x.kind}\u0000${x.e.key}`) !== x.e.bundle);
    if (changed.length === 0) return { id, versions: 0 };
    const rows = changed.map((x) => ({ id: newId('ver'), kind: x.kind, key: x.e.key, manifest: x.e, bundle: x.e.bundle }));
    await c.query(
      `INSERT INTO versions (id, org_id, app_id, push_id, push_seq, kind, key, manifest, bundle_digest, status, pushed_at)
       SELECT r.id, $1, $2, $3, $4, r.kind, r.key, r.manifest, r.bundle, 'compiling', now()
       FROM jsonb_to_recordset($5::jsonb) AS r(id text, kind text, key text, manifest jsonb, bundle text)`,
      [p.orgId, p.appId, id, seq, JSON.stringify(rows)]);
    const journeyKeys = rows.filter((r) => r.kind === 'journey').map((r) => r.key);
    if (journeyKeys.length) {
      await c.query(
        `INSERT INTO journeys (org_id, key, enabled, created_at, updated_at)
         SELECT $1, k, false, now(), now() FROM unnest($2::text[]) AS k
         ON CONFLICT (org_id, key) DO UPDATE SET updated_at = now()`, [p.orgId, journeyKeys]);
    }
    return { id, versions: rows.length };
  });
}

/**
 * Throws OverQuotaError when the push would file journey keys the org does not have past its
 * journeys limit (the whole push is refused). Keys the org has count nothing, so pushing new
 * versions of existing journeys works at or over the limit.
 */
async function checkJourneyQuota(c: pg.PoolClient, orgId: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  const limit = await lockQuota(c, orgId, 'journeys');
  if (limit === null) return;
  const want = [...new Set(keys)];
  const r = await c.query<{ n: string; have: string }>(
    'SELECT count(*) AS n, count(*) FILTER (WHERE key = ANY($2::text[])) AS have FROM journeys WHERE org_id = $1', [orgId, want]);
  const adding = want.length - Number(r.rows[0]!.have);
  if (adding > 0) checkQuota('journeys', limit, Number(r.rows[0]!.n), adding);
}

const VERSION_COLS = 'id, org_id, key, app_id, push_id, kind, module_digest, manifest, status, pushed_at, compiled_at, error';

export const versionOut = (r: any) => ({
  id: r.id, orgId: r.org_id, key: r.key, appId: r.app_id, pushId: r.push_id, kind: r.kind,
  moduleDigest: r.module_digest, manifest: r.manifest, status: r.status, pushedAt: r.pushed_at,
  compiledAt: r.compiled_at, error: r.error,
});

const pushOut = (r: any, versions: any[]) => ({
  id: r.id, orgId: r.org_id, appId: r.app_id, seq: Number(r.seq), manifest: r.manifest,
  manifestDigest: r.manifest_digest, sourceDigest: r.source_digest, createdBy: r.created_by,
  // Pushes stored before pg-020 have no scheme column: their `created_by` told it.
  createdByRole: r.created_by_role ?? null,
  createdByScheme: r.created_by_scheme ?? (r.created_by === 'pipelineKey' ? 'pipelineKey' : 'session'),
  createdAt: r.created_at,
  versions: versions.map(versionOut),
  compiledEntries: versions.filter((v) => v.status !== 'compiling').length,
  totalEntries: versions.length,
});

const PUSH_COLS = 'id, org_id, app_id, seq, manifest, manifest_digest, source_digest, created_by, created_by_scheme, created_by_role, created_at';

async function withVersions(pool: pg.Pool, rows: any[]) {
  if (rows.length === 0) return [];
  const v = await pool.query(`SELECT ${VERSION_COLS} FROM versions WHERE push_id = ANY($1::text[]) ORDER BY kind, key`, [rows.map((r) => r.id)]);
  const by = new Map<string, any[]>();
  for (const x of v.rows) { const l = by.get(x.push_id); if (l) l.push(x); else by.set(x.push_id, [x]); }
  return rows.map((r) => pushOut(r, by.get(r.id) ?? []));
}

export async function getPush(pool: pg.Pool, orgId: string, id: string) {
  const r = await pool.query(`SELECT ${PUSH_COLS} FROM pushes WHERE org_id = $1 AND id = $2`, [orgId, id]);
  return r.rows[0] ? (await withVersions(pool, r.rows))[0]! : null;
}

/** Newest first; `beforeSeq` continues after a page. Fetches `limit + 1` to tell whether more exist. */
export async function listPushes(pool: pg.Pool, orgId: string, o: { appId?: string; beforeSeq?: number; limit: number }) {
  const args: unknown[] = [orgId];
  let where = 'org_id = $1';
  if (o.appId !== undefined) { args.push(o.appId); where += ` AND app_id = $${args.length}`; }
  if (o.beforeSeq !== undefined) { args.push(o.beforeSeq); where += ` AND seq < $${args.length}`; }
  args.push(o.limit + 1);
  const r = await pool.query(`SELECT ${PUSH_COLS} FROM pushes WHERE ${where} ORDER BY seq DESC LIMIT $${args.length}`, args);
  return withVersions(pool, r.rows);
}

/** The source digest of a push, or null when the org has no such push. */
export async function pushSourceDigest(pool: pg.Pool, orgId: string, id: string): Promise<string | null> {
  const r = await pool.query<{ source_digest: string }>('SELECT source_digest FROM pushes WHERE org_id = $1 AND id = $2', [orgId, id]);
  return r.rows[0]?.source_digest ?? null;
}
