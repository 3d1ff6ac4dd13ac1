// What a store error means (pipeline/store/errors.ts), table-driven over errors a real Postgres
// raises: the Postgres server when DATABASE_URL is set, else PGlite (the embedded default). The API
// and the ingestion steps all ask this one classifier.
import t from 'tap';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { busyOrgOf, classifyStoreError, type StoreErrorKind } from '../pipeline/store/errors.js';

interface Db { query(sql: string, params?: unknown[]): Promise<unknown>; close(): Promise<void> }

async function open(): Promise<Db> {
  if (process.env.DATABASE_URL) {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    c.on('error', () => undefined); // a terminated backend reports here too
    return { query: (s, p) => c.query(s, p as unknown[]), close: () => c.end().catch(() => undefined) };
  }
  const db = new PGlite();
  return { query: (s, p) => db.query(s, p as unknown[]), close: () => db.close() };
}

const failure = async (f: () => Promise<unknown>) => { try { await f(); } catch (e) { return e; } throw new Error('no error'); };

const db = await open();
t.teardown(() => db.close());
const table = `t_${Math.random().toString(36).slice(2, 10)}`;
await db.query(`CREATE TEMP TABLE ${table} (id int PRIMARY KEY, n smallint)`);
await db.query(`INSERT INTO ${table} VALUES (1, 1)`);

const cases: Array<[string, StoreErrorKind, () => Promise<unknown>]> = [
  ['a NUL character in text', 'bad_data', () => db.query('SELECT $1::text', ['a\u0000b'])],
  ['an integer beyond the column', 'bad_data', () => db.query(`INSERT INTO ${table} VALUES (2, 99999)`)],
  ['division by zero', 'bad_data', () => db.query('SELECT 1 / 0')],
  ['an invalid date', 'bad_data', () => db.query(`SELECT '2026-02-30'::date`)],
  ['invalid JSON', 'bad_data', () => db.query(`SELECT '{"a":'::jsonb`)],
  ['a unique violation', 'unique', () => db.query(`INSERT INTO ${table} VALUES (1, 1)`)],
  ['a serialization failure', 'concurrency', () => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40001'; END $$`)],
  ['a deadlock', 'concurrency', () => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40P01'; END $$`)],
  ['a lock not available', 'concurrency', () => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '55P03'; END $$`)],
  ['a busy org (migration 41)', 'busy', () => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'HWBSY', DETAIL = 'org_1'; END $$`)],
  ['a full disk', 'outage', () => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '53100'; END $$`)],
  ['an administrator shutdown', 'outage', () => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '57P01'; END $$`)],
  ['a syntax error (a bug)', 'other', () => db.query('SELEKT 1')],
  ['an unknown table (a bug)', 'other', () => db.query('SELECT * FROM no_such_table_here')],
];
for (const [what, kind, f] of cases) {
  t.test(what, async (t) => { t.equal(classifyStoreError(await failure(f)), kind); });
}

t.test('a busy error names its org; other errors name none', async (t) => {
  t.equal(busyOrgOf(await failure(() => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'HWBSY', DETAIL = 'org_7'; END $$`))), 'org_7');
  t.equal(busyOrgOf(await failure(() => db.query(`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40001', DETAIL = 'org_7'; END $$`))), undefined);
  t.equal(busyOrgOf(new Error('boom')), undefined);
});

t.test('a server that refuses connections is an outage', async (t) => {
  const c = new pg.Client({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 2_000 });
  t.equal(classifyStoreError(await failure(() => c.connect())), 'outage');
});

t.test('a connection the server ends is an outage', { skip: !process.env.DATABASE_URL && 'needs a Postgres server' }, async (t) => {
  const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await c.connect();
  c.on('error', () => undefined);
  const e = await failure(() => c.query('SELECT pg_terminate_backend(pg_backend_pid())'));
  t.equal(classifyStoreError(e), 'outage', String((e as Error).message));
  const after = await failure(() => c.query('SELECT 1'));
  t.equal(classifyStoreError(after), 'outage', `then: ${(after as Error).message}`);
  await c.end().catch(() => undefined);
});

t.test('not a store error at all', async (t) => {
  t.equal(classifyStoreError(new Error('boom')), 'other');
  t.equal(classifyStoreError(undefined), 'other');
  t.equal(classifyStoreError({ code: 42 }), 'other');
});
