// The literals ingestion writes into simple-query SQL (pipeline/store/postgres.ts) read back as the
// exact values, on the Postgres server when DATABASE_URL is set, else on PGlite (the embedded default),
// and match what pg's own escapeLiteral writes.
import t from 'tap';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { jsonLiteral, quoteLiteral } from '../pipeline/store/postgres.js';

interface Db { query(sql: string): Promise<Array<Record<string, unknown>>>; close(): Promise<void> }

async function open(): Promise<Db> {
  if (process.env.DATABASE_URL) {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    return { query: async (s) => (await c.query(s)).rows, close: () => c.end() };
  }
  const db = new PGlite();
  return { query: async (s) => (await db.query<Record<string, unknown>>(s)).rows, close: () => db.close() };
}

const db = await open();
t.teardown(() => db.close());

const strings: Array<[string, string]> = [
  ['empty', ''],
  ['plain', 'Order Completed'],
  ['a quote', "it's"],
  ['quotes only', "''''"],
  ['a backslash', 'a\\b'],
  ['a backslash before a quote', "\\'"],
  ['a trailing backslash', 'end\\'],
  ['escapes as text', '\\n\\t\\u0041'],
  ['non-ASCII', 'naïve 東京 🚀'],
  ['SQL in a value', "x'); DROP TABLE profiles; --"],
];
for (const [what, s] of strings) {
  t.test(`string: ${what}`, async (t) => {
    t.equal(quoteLiteral(s), pg.escapeLiteral(s), 'as pg writes it');
    const rows = await db.query(`SELECT ${quoteLiteral(s)}::text AS v`);
    t.equal(rows[0]!.v, s, 'reads back exactly');
  });
}

t.test('jsonb literals read back as the value', async (t) => {
  const value = {
    event: "it's \\ done", properties: { path: 'C:\\temp\\x', quote: '"\'"', nested: [1, 2.5, null, true, { a: '\u00e9' }] },
    escaped: 'escaped \\u0000 stays text',
  };
  const rows = await db.query(`SELECT ${jsonLiteral(value)} AS v`);
  t.same(rows[0]!.v, JSON.parse(JSON.stringify(value)));
});
