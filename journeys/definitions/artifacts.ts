// Artifacts: content-addressed bytes per org, in Postgres so that every process of a deployment
// reads them. An upload is written chunk by chunk as it arrives (never held whole), hashed on the
// way, and published by one statement that inserts the (org, digest) row: a reader sees a complete,
// verified artifact or none. Two uploads of one digest both stage; the first publish wins and the
// other drops its chunks, so the bytes are stored once. The org's artifactBytes quota is checked
// while the body arrives and again, under the org's quota lock, at the publish.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { newId } from '../../pipeline/ids.js';
import { checkQuota, lockQuota, quotaOf } from '../../pipeline/quotas.js';
import { tx } from '../../pipeline/store/postgres.js';

/** Bytes per stored chunk row (a chunk may exceed it by one incoming piece). */
export const CHUNK_BYTES = 256 * 1024;
/** A staged upload older than this is a leftover of a crash: the sweep removes it. */
export const STALE_UPLOAD_MS = 60 * 60 * 1000;

export type ArtifactKind = 'bundle' | 'source';
export interface Artifact { digest: string; kind: ArtifactKind; size: number; createdAt: string }

export type StoreResult =
  | { stored: Artifact; created: boolean }
  | { mismatch: string };

const artifactOut = (r: any): Artifact => ({ digest: r.digest, kind: r.kind, size: Number(r.size), createdAt: r.created_at });

export async function getArtifact(pool: pg.Pool, orgId: string, digest: string): Promise<Artifact | null> {
  const r = await pool.query('SELECT digest, kind, size, created_at FROM artifacts WHERE org_id = $1 AND digest = $2', [orgId, digest]);
  return r.rows[0] ? artifactOut(r.rows[0]) : null;
}

/** The digests of `digests` the org does not have. */
export async function missingArtifacts(db: pg.Pool | pg.PoolClient, orgId: string, digests: string[]): Promise<Set<string>> {
  const want = [...new Set(digests)];
  const r = await db.query<{ digest: string }>('SELECT digest FROM artifacts WHERE org_id = $1 AND digest = ANY($2::text[])', [orgId, want]);
  const have = new Set(r.rows.map((x) => x.digest));
  return new Set(want.filter((d) => !have.has(d)));
}

/** The whole artifact (bundles and source archives are read whole), or null. */
export async function readArtifact(pool: pg.Pool, orgId: string, digest: string): Promise<Buffer | null> {
  const r = await pool.query<{ bytes: Buffer }>(
    `SELECT c.bytes FROM artifacts a JOIN artifact_chunks c ON c.blob_id = a.blob_id
     WHERE a.org_id = $1 AND a.digest = $2 ORDER BY c.seq`, [orgId, digest]);
  if (r.rows.length === 0) return (await getArtifact(pool, orgId, digest)) ? Buffer.alloc(0) : null;
  return r.rows.length === 1 ? r.rows[0]!.bytes : Buffer.concat(r.rows.map((x) => x.bytes));
}

export interface StoreOptions { orgId: string; digest: string; kind: ArtifactKind; body: AsyncIterable<Uint8Array> }

/**
 * Stores the body under `digest` unless the org has it. The body is always read and hashed: bytes
 * that do not hash to the digest are refused (`mismatch`) even when the artifact is present.
 * Throws what the body throws (too large, client gone) after removing what was staged.
 */
export async function storeArtifact(pool: pg.Pool, o: StoreOptions): Promise<StoreResult> {
  const hash = createHash('sha256');
  const existing = await getArtifact(pool, o.orgId, o.digest);
  if (existing) {
    for await (const c of o.body) hash.update(c);
    const actual = hash.digest('hex');
    return actual === o.digest ? { stored: existing, created: false } : { mismatch: actual };
  }
  // The org's artifactBytes quota: an upload stops as soon as it cannot fit beside what the org
  // stores (read here without the lock, so nothing far past the limit is staged); the publish
  // checks again under the org's quota lock, which decides between uploads racing for the room.
  const limit = quotaOf((await pool.query('SELECT limits FROM orgs WHERE id = $1', [o.orgId])).rows[0]?.limits, 'artifactBytes');
  const usedBefore = limit === null ? 0 : (await storedBytes(pool, o.orgId, o.digest)).used;
  const blobId = newId('blb');
  await pool.query('INSERT INTO artifact_uploads (blob_id, org_id, started_at) VALUES ($1, $2, now())', [blobId, o.orgId]);
  try {
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    let seq = 0;
    let size = 0;
    const flush = async () => {
      const bytes = pending.length === 1 ? Buffer.from(pending[0]!.buffer, pending[0]!.byteOffset, pending[0]!.byteLength) : Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await pool.query('INSERT INTO artifact_chunks (blob_id, seq, bytes) VALUES ($1, $2, $3)', [blobId, seq++, bytes]);
    };
    // Reading waits for each chunk's insert: the body's backpressure reaches the socket.
    for await (const c of o.body) {
      hash.update(c);
      size += c.byteLength;
      if (limit !== null) checkQuota('artifactBytes', limit, usedBefore, size);
      pending.push(c);
      pendingBytes += c.byteLength;
      if (pendingBytes >= CHUNK_BYTES) await flush();
    }
    if (pendingBytes > 0) await flush();
    const actual = hash.digest('hex');
    if (actual !== o.digest) { await dropBlob(pool, blobId); return { mismatch: actual }; }
    const r = await tx(pool, async (c) => {
      const cap = await lockQuota(c, o.orgId, 'artifactBytes');
      if (cap !== null) {
        const now = await storedBytes(c, o.orgId, o.digest);
        if (!now.has) checkQuota('artifactBytes', cap, now.used, size);
      }
      return c.query(
        `WITH ins AS (
           INSERT INTO artifacts (org_id, digest, kind, size, blob_id, created_at) VALUES ($1, $2, $3, $4, $5, now())
           ON CONFLICT (org_id, digest) DO NOTHING RETURNING digest, kind, size, created_at),
         staged AS (DELETE FROM artifact_uploads WHERE blob_id = $5)
         SELECT * FROM ins`, [o.orgId, o.digest, o.kind, size, blobId]);
    });
    if (r.rows[0]) return { stored: artifactOut(r.rows[0]), created: true };
    // A concurrent upload of the same digest published first.
    await dropBlob(pool, blobId);
    const won = await getArtifact(pool, o.orgId, o.digest);
    if (!won) throw new Error(`artifact ${o.digest} vanished after a concurrent publish`);
    return { stored: won, created: false };
  } catch (err) {
    await dropBlob(pool, blobId).catch(() => {});
    throw err;
  }
}

/** The bytes of the org's stored artifacts, and whether `digest` is one of them (it then adds nothing). */
async function storedBytes(db: pg.Pool | pg.PoolClient, orgId: string, digest: string): Promise<{ used: number; has: boolean }> {
  const r = await db.query<{ used: string; has: boolean | null }>(
    'SELECT COALESCE(sum(size), 0) AS used, bool_or(digest = $2) AS has FROM artifacts WHERE org_id = $1', [orgId, digest]);
  return { used: Number(r.rows[0]!.used), has: r.rows[0]!.has === true };
}

async function dropBlob(pool: pg.Pool, blobId: string): Promise<void> {
  await pool.query('DELETE FROM artifact_chunks WHERE blob_id = $1', [blobId]);
  await pool.query('DELETE FROM artifact_uploads WHERE blob_id = $1', [blobId]);
}

/** Removes staged uploads older than `olderThanMs` (a process died mid-upload). Returns how many. */
export async function sweepUploads(pool: pg.Pool, olderThanMs = STALE_UPLOAD_MS): Promise<number> {
  const r = await pool.query<{ blob_id: string }>(
    `SELECT blob_id FROM artifact_uploads WHERE started_at < now() - make_interval(secs => $1) LIMIT 100`, [olderThanMs / 1000]);
  for (const row of r.rows) await dropBlob(pool, row.blob_id);
  return r.rows.length;
}
