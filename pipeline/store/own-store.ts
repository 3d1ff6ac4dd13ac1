// A migrated, empty store of its own, for tools that measure or check the write functions without a
// service: a database created on the Postgres server `url` names (dropped by `close`), else embedded
// Postgres in a temporary directory (removed by `close`). Used by bench/history-fill.ts and
// test/store-plans.test.ts; test/store-upgrade.test.ts migrates it to an earlier version first.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PG_MIGRATIONS, type Migration } from './migrations.js';
import { startPglite } from './pglite-start.js';

export type OwnQuery = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

export interface OwnStore {
  q: OwnQuery;
  /** The same as a client that answers `{ rows }`. */
  client: { query(sql: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> };
  /** Embedded: one session, so nothing runs beside a statement (the fast path's `lock: false`). */
  serial: boolean;
  /** "PostgreSQL 15.x" or "PGlite". */
  what: string;
  close(): Promise<void>;
}

/** `migrations`: those to apply (default all of them), for a store as an earlier version left it. */
export async function openOwnStore(o: { url?: string; prefix: string; migrations?: Migration[] }): Promise<OwnStore> {
  const migrations = o.migrations ?? PG_MIGRATIONS;
  if (o.url) {
    const name = `${o.prefix}_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: o.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const u = new URL(o.url); u.pathname = `/${name}`;
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    const q: OwnQuery = async (sql, params) => (await c.query(sql, params)).rows;
    for (const m of migrations) for (const s of m.statements) await q(s);
    const version = (await q('SHOW server_version'))[0]!.server_version as string;
    return { q, client: { query: async (sql, params) => ({ rows: await q(sql, params) }) }, serial: false, what: `PostgreSQL ${version}`, async close() { await c.end(); await admin.query(`DROP DATABASE ${name} WITH (FORCE)`); await admin.end(); } };
  }
  const dir = mkdtempSync(join(tmpdir(), `${o.prefix}-`));
  const db = await startPglite(dir);
  for (const m of migrations) for (const s of m.statements) await db.exec(s);
  const q: OwnQuery = async (sql, params) => (await db.query<Record<string, unknown>>(sql, params)).rows;
  return { q, client: { query: async (sql, params) => ({ rows: await q(sql, params) }) }, serial: true, what: 'PGlite', async close() { await db.close(); rmSync(dir, { recursive: true, force: true }); } };
}
