// A Postgres database of a test's own, for tests whose server runs an outbox sender (webhooks,
// e-mail) with settings of their own. Every process on a database claims every pending delivery,
// so on the shared DATABASE_URL another test file's server (other attempts, backoff, no private
// targets, or about to stop) would take this test's deliveries. Embedded mode needs nothing:
// each test server has its own data directory.
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgres } from '../../pipeline/store/postgres.js';
import { PG_MIGRATIONS } from '../../pipeline/store/migrations.js';
import { createLogger } from '../../lib/log.js';
import { WAKE_CHANNEL, type WakeTopic } from '../../pipeline/wakes.js';
import { seedEmbedded } from './server.js';

/** A fresh database's URL, dropped at the test's teardown; undefined without DATABASE_URL. */
export async function ownDatabase(t: { teardown(fn: () => unknown): void }): Promise<string | undefined> {
  const url = process.env.DATABASE_URL;
  if (!url) return undefined;
  const name = `hw_t_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try { await c.query(sql); } finally { await c.end(); }
  };
  await admin(`CREATE DATABASE ${name}`);
  t.teardown(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {}));
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** The environment a test server gets for `db` (nothing in embedded mode). */
export const dbEnv = (db: string | undefined): Record<string, string> => (db ? { DATABASE_URL: db } : {});

/** A store of a test's own, with headwater's schema: its pool, and embedded, its data directory. */
export interface OwnStore { pool: pg.Pool; dataDir?: string }

/**
 * A store of the test's own with every migration's schema: a fresh database on the Postgres server
 * when DATABASE_URL is set (migrated here), else embedded PGlite in a temporary directory started
 * from the migrated copy (helpers/seed.ts); both closed at the test's teardown.
 */
export async function ownStore(t: { teardown(fn: () => unknown): void }): Promise<OwnStore> {
  const url = await ownDatabase(t);
  if (url) {
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    // Runs before ownDatabase's DROP ... WITH (FORCE) (teardowns run last-in first-out). A backend
    // still exiting after pool.end() is then terminated, and its FATAL 57P01 can reach the ended
    // client as an 'error' the pool re-emits: with no listener, it crashed the test file.
    t.teardown(() => { pool.on('error', () => {}); return pool.end(); });
    for (const m of PG_MIGRATIONS) for (const sql of m.statements) await pool.query(sql);
    return { pool };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'hw-store-'));
  await seedEmbedded(dataDir);
  const store = await openPostgres({ dataDir, log: createLogger('silent') });
  t.teardown(async () => { await store.close(); rmSync(dataDir, { recursive: true, force: true }); });
  return { pool: store.pool, dataDir };
}

/** The pool of `ownStore`. */
export const ownStorePool = async (t: { teardown(fn: () => unknown): void }): Promise<pg.Pool> => (await ownStore(t)).pool;

/**
 * What another process does after it committed work on a shared PostgreSQL: tells every process on
 * that database (`NOTIFY`, pipeline/wakes.ts), as `topic` work of a node that is none of theirs.
 */
export async function tellAsAnotherProcess(databaseUrl: string, topic: WakeTopic): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try { await c.query('SELECT pg_notify($1, $2)', [WAKE_CHANNEL, `${topic}:test-process`]); } finally { await c.end(); }
}
