import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { mkdirSync, rmSync } from 'node:fs';
import { lockDir } from './lock.js';
import { join } from 'node:path';
import pg from 'pg';
import type { Duplex } from 'node:stream';
import { PgliteChannel } from './pglite-channel.js';
import { startVacuum } from './vacuum.js';
import type { Logger } from '../../lib/log.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** Plain connection settings, cloneable into worker threads (which open their own pools). */
export type PgConnection = { connectionString: string } | { host: string; port: number; user: string; database: string };

export function createPool(conn: PgConnection, max: number, log?: Logger, stream?: () => Duplex): pg.Pool {
  // One connection outlives the idle timeout (10 s): the background loops of an idle process look
  // every 15 s at most, and each look on an emptied pool opened a connection (a TCP and
  // authentication round trip here, a backend process started on the server).
  const pool = new pg.Pool({ ...conn, max, min: 1, types, ...(stream ? { stream } : {}) });
  pool.on('error', (err) => log?.warn('postgres idle client error', { err }));
  return pool;
}

export interface Postgres {
  pool: pg.Pool;
  connection: PgConnection;
  embedded: boolean;
  close(): Promise<void>;
}

// Per-pool type parsers (no change to pg's global table): timestamps come back as ISO 8601 strings,
// bigints (counts) as numbers.
const types = {
  getTypeParser(oid: number, format?: any) {
    if (oid === 1184 || oid === 1114) return (v: string) => new Date(oid === 1114 ? v + 'Z' : v).toISOString();
    if (oid === 20) return (v: string) => Number(v);
    return (pg.types.getTypeParser as any)(oid, format);
  },
};

/**
 * Opens PostgreSQL at `url`, or starts embedded PGlite in `dataDir` when `url` is unset, with a page
 * cache of `cacheMb` (its shared_buffers; PostgreSQL's 128 MB when unset). `idleTxMs`: how long a
 * client of the store's socket may leave a transaction idle while the service waits (0 or unset: no limit).
 */
export async function openPostgres(opts: { url?: string; dataDir: string; log: Logger; max?: number; cacheMb?: number; idleTxMs?: number }): Promise<Postgres> {
  if (opts.url) {
    const connection = { connectionString: opts.url };
    const pool = createPool(connection, opts.max ?? 8, opts.log);
    return { pool, connection, embedded: false, close: () => pool.end() };
  }
  const dir = join(opts.dataDir, 'pg');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const unlock = lockDir(dir, 'Postgres');
  // A socket in the data directory: only this user can reach it, and no TCP port is opened.
  const sockDir = join(opts.dataDir, 'run');
  mkdirSync(sockDir, { recursive: true, mode: 0o700 });
  const socketPath = join(sockDir, '.s.PGSQL.5432');
  rmSync(socketPath, { force: true });
  const worker = new Worker(new URL('./pglite-host.js', import.meta.url), { workerData: { dataDir: join(dir, 'data'), socketPath, cacheMb: opts.cacheMb, idleTxMs: opts.idleTxMs } });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', (m) => (m.type === 'ready' ? resolve() : reject(new Error('pglite failed to start'))));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`pglite host exited with ${code}`)));
  });
  // PGlite is one session. The host runs a connection's requests only while no other connection
  // has a transaction open on it (pglite-host.ts), so connections behave as separate sessions that
  // never run at once; with two, one connection's next statement waits at the host while the
  // other's runs.
  const connection = { host: sockDir, port: 5432, user: 'postgres', database: 'postgres' };
  worker.on('message', (m: { type?: string; ms?: number }) => {
    if (m.type === 'idle-ended') opts.log.warn('embedded store: a socket client\'s transaction left idle while the service waited was rolled back and its connection closed', { idledMs: m.ms });
  });
  const channel = new PgliteChannel(worker);
  const pool = createPool(connection, EMBEDDED_CONNECTIONS, opts.log, channel.stream);
  const vacuum = startVacuum({ pool, log: opts.log });
  return {
    pool,
    connection,
    embedded: true,
    async close() {
      await vacuum.close();
      await pool.end();
      channel.close();
      worker.postMessage({ type: 'close' });
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => { void worker.terminate().then(() => resolve()); }, 5000);
        const onClosed = (m: { type?: string }) => {
          if (m?.type !== 'closed') return;
          worker.off('message', onClosed);
          clearTimeout(t);
          void worker.terminate().then(() => resolve());
        };
        worker.on('message', onClosed);
      });
      unlock();
    },
  };
}

/** Connections to embedded Postgres: one statement running, one waiting at the host. */
const EMBEDDED_CONNECTIONS = 2;

/** Signed 64-bit advisory lock key of a text (Postgres advisory locks take a bigint). */
export const advisoryKey = (text: string) => createHash('sha1').update(text).digest().readBigInt64BE(0).toString();

/**
 * `sql` with every `$n` replaced by a literal of `params[n - 1]` (strings, finite numbers, null, and
 * arrays of those), for the simple-query protocol, which carries several statements in one round
 * trip. The SQL must cast every parameter (`$1::text[]`), as an empty ARRAY[] has no type of its own.
 */
export function inlineParams(sql: string, params: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1]));
}

/**
 * A string literal of `s`, as pg's escapeLiteral writes it (quotes doubled; with a backslash, the
 * E'' form with backslashes doubled), by native replaces: escapeLiteral concatenates character by
 * character, and on batch-sized JSON it was the largest cost of a worker thread after GC.
 */
export function quoteLiteral(s: string): string {
  const q = s.includes("'") ? s.replace(/'/g, "''") : s;
  return s.includes('\\') ? ` E'${q.replace(/\\/g, '\\\\')}'` : `'${q}'`;
}

/** A jsonb literal of `v` for the simple-query protocol. */
export const jsonLiteral = (v: unknown) => `${quoteLiteral(JSON.stringify(v))}::jsonb`;

function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) return `ARRAY[${v.map(literal).join(',')}]`;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'string') return quoteLiteral(v);
  throw new TypeError(`no SQL literal for a ${typeof v}`);
}

/** Runs `fn` in a transaction on one dedicated connection; rolled back when `keep` says its result wrote nothing to keep. */
export async function tx<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>, keep: (out: T) => boolean = () => true): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    const out = await fn(c);
    await c.query(keep(out) ? 'COMMIT' : 'ROLLBACK');
    return out;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    c.release();
  }
}
