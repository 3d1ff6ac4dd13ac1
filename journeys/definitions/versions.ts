// What the journey runtime reads: the version a new execution takes (the newest `ready` one of a
// key) and the compiled code of a version by id (running executions keep theirs).
import type pg from 'pg';
import { versionOut } from './pushes.js';

export type Version = ReturnType<typeof versionOut>;

/** The newest `ready` version of a key, or null. */
export async function latestReadyVersion(pool: pg.Pool, orgId: string, key: string, kind: 'journey' | 'template' = 'journey'): Promise<Version | null> {
  const r = await pool.query(
    `SELECT id, org_id, key, app_id, push_id, kind, module_digest, manifest, status, pushed_at, compiled_at, error
     FROM versions WHERE org_id = $1 AND kind = $2 AND key = $3 AND status = 'ready' ORDER BY push_seq DESC LIMIT 1`,
    [orgId, kind, key]);
  return r.rows[0] ? versionOut(r.rows[0]) : null;
}

export interface VersionModule { id: string; kind: 'journey' | 'template'; key: string; pushId: string; moduleDigest: string; code: string }

/**
 * The compiled script of a ready version: evaluated as a script, it assigns its module namespace to
 * `globalThis[MODULE_GLOBAL]`, whose `default` is the definition. Null when the org has no such
 * ready version.
 */
export async function versionModule(pool: pg.Pool, orgId: string, versionId: string): Promise<VersionModule | null> {
  const r = await pool.query(
    `SELECT id, kind, key, push_id, module_digest, module_code FROM versions
     WHERE org_id = $1 AND id = $2 AND status = 'ready'`, [orgId, versionId]);
  const x = r.rows[0];
  return x ? { id: x.id, kind: x.kind, key: x.key, pushId: x.push_id, moduleDigest: x.module_digest, code: x.module_code } : null;
}

/** The enabled journeys of an org with their newest ready version (what triggers start). */
export async function enabledJourneys(pool: pg.Pool, orgId: string): Promise<Array<{ key: string; version: Version }>> {
  const r = await pool.query(
    `SELECT v.id, v.org_id, v.key, v.app_id, v.push_id, v.kind, v.module_digest, v.manifest, v.status, v.pushed_at, v.compiled_at, v.error
     FROM journeys j JOIN LATERAL (SELECT * FROM versions v WHERE v.org_id = j.org_id AND v.kind = 'journey' AND v.key = j.key
       AND v.status = 'ready' ORDER BY v.push_seq DESC LIMIT 1) v ON true
     WHERE j.org_id = $1 AND j.enabled ORDER BY j.key`, [orgId]);
  return r.rows.map((x) => ({ key: x.key, version: versionOut(x) }));
}
