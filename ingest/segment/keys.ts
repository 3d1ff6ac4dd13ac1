// Write keys: the per-source credential of Segment's SDKs. Only the sha256 of a key is stored. A
// resolved key is cached for one second (positive and negative), so a deleted key or an archived
// source is refused by every front end within a second while a busy key costs one lookup a second.
import type pg from 'pg';
import { hashToken } from '../../pipeline/secrets.js';
import { newId, newToken } from '../../pipeline/ids.js';

export const WRITE_KEY_PREFIX = 'hww';
const TTL_MS = 1000;
const CACHE_MAX = 100_000;

export interface WriteKeyInfo {
  keyId: string;
  orgId: string;
  sourceId: string;
  appId: string;
  environment: 'development' | 'production';
  /** The source or its app is archived: the key is refused with 403. */
  archived: boolean;
}

interface Entry { info: WriteKeyInfo | null; until: number }

export class WriteKeys {
  private cache = new Map<string, Entry>();
  private loading = new Map<string, Promise<WriteKeyInfo | null>>();
  constructor(private readonly pool: pg.Pool) {}

  /** The key's source, or null when the key is unknown or deleted. */
  resolve(key: string): WriteKeyInfo | null | Promise<WriteKeyInfo | null> {
    if (!key || key.length > 200) return null;
    const hash = hashToken(key);
    const hit = this.cache.get(hash);
    if (hit && hit.until > Date.now()) return hit.info;
    let p = this.loading.get(hash);
    if (p) return p;
    p = this.pool.query(
      `SELECT k.id, k.org_id, k.source_id, s.app_id, a.environment,
              (s.archived_at IS NOT NULL OR a.status = 'archived') AS archived
       FROM write_keys k JOIN sources s ON s.id = k.source_id JOIN apps a ON a.id = s.app_id
       WHERE k.hash = $1 AND k.revoked_at IS NULL`, [hash],
    ).then((r) => {
      const row = r.rows[0];
      const info: WriteKeyInfo | null = row
        ? { keyId: row.id, orgId: row.org_id, sourceId: row.source_id, appId: row.app_id, environment: row.environment, archived: row.archived === true }
        : null;
      if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(hash, { info, until: Date.now() + TTL_MS });
      return info;
    }).finally(() => this.loading.delete(hash));
    this.loading.set(hash, p);
    return p;
  }

  /** Forgets a deleted key at once on this front end (others within the TTL). */
  forget(hash: string) { this.cache.delete(hash); }

  close() { this.cache.clear(); }
}

export interface WriteKeyRow { id: string; source_id: string; prefix: string; created_at: Date }

export const writeKeyOut = (r: WriteKeyRow, writeKey: string | null = null) => ({
  id: r.id, writeKey, prefix: r.prefix, sourceId: r.source_id, createdAt: r.created_at,
});

/** Creates a key for the source; the key itself is returned once, never stored. */
export async function createWriteKey(pool: pg.Pool, orgId: string, sourceId: string): Promise<{ row: WriteKeyRow; key: string }> {
  const key = newToken(WRITE_KEY_PREFIX);
  const r = await pool.query(
    `INSERT INTO write_keys (id, org_id, source_id, hash, prefix) VALUES ($1, $2, $3, $4, $5)
     RETURNING id, source_id, prefix, created_at`,
    [newId('wk'), orgId, sourceId, hashToken(key), key.slice(0, 12)]);
  return { row: r.rows[0], key };
}

export async function listWriteKeys(pool: pg.Pool, orgId: string, sourceId: string): Promise<WriteKeyRow[]> {
  const r = await pool.query(
    `SELECT id, source_id, prefix, created_at FROM write_keys
     WHERE org_id = $1 AND source_id = $2 AND revoked_at IS NULL ORDER BY created_at, id`, [orgId, sourceId]);
  return r.rows;
}

/** Revokes a live key of the source; its hash (to forget it), or null when there is no such key. */
export async function deleteWriteKey(pool: pg.Pool, orgId: string, sourceId: string, keyId: string): Promise<string | null> {
  const r = await pool.query(
    `UPDATE write_keys SET revoked_at = now() WHERE org_id = $1 AND source_id = $2 AND id = $3 AND revoked_at IS NULL RETURNING hash`,
    [orgId, sourceId, keyId]);
  return r.rows[0]?.hash ?? null;
}
