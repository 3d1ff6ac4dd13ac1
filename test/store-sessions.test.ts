// The store's connections behave as separate sessions: a statement of one connection never runs
// inside another's open transaction, a connection that goes away mid-transaction leaves nothing
// behind, and each may prepare statements by name. On PostgreSQL these are the server's own
// guarantees; embedded PGlite is one session shared by the pool's connections, and its host thread
// keeps them (pipeline/store/pglite-host.ts). Both passes run this against their own store.
import t from 'tap';
import pg from 'pg';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ownStore } from './helpers/db.js';

const embedded = !process.env.DATABASE_URL;
// One store for the file: each case works in a table of its own.
const store = await ownStore(t);
const pool = store.pool;

async function table(pool: pg.Pool): Promise<string> {
  const name = `sess_${Math.random().toString(36).slice(2, 10)}`;
  await pool.query(`CREATE TABLE ${name} (x int)`);
  return name;
}

/** A promise's state without waiting for it. */
function watch<T>(p: Promise<T>): { settled: () => boolean; value: Promise<T> } {
  let done = false;
  p.then(() => { done = true; }, () => { done = true; });
  return { settled: () => done, value: p };
}

t.test('a statement never runs inside another connection\'s open transaction', async (t) => {
  const tbl = await table(pool);
  const a = await pool.connect();
  try {
    await a.query('BEGIN');
    await a.query(`INSERT INTO ${tbl} VALUES (1)`);
    // Sent while the transaction is open, before the transaction's next statement.
    const other = watch(pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${tbl}`));
    t.same((await a.query<{ n: string }>(`SELECT count(*) AS n FROM ${tbl}`)).rows[0]!.n, '1', 'the transaction sees its own row');
    // Embedded, the other connection's statement waits for the transaction (one session).
    if (embedded) t.notOk(other.settled(), 'the other connection waits while the transaction is open');
    await a.query('ROLLBACK');
    t.same((await other.value).rows[0]!.n, '0', 'the other connection never saw the uncommitted row');
  } finally {
    a.release();
  }
  t.same((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${tbl}`)).rows[0]!.n, '0', 'nothing was kept');
});

t.test('a connection that goes away mid-transaction leaves nothing open', async (t) => {
  const tbl = await table(pool);
  const a = await pool.connect();
  await a.query('BEGIN');
  await a.query(`INSERT INTO ${tbl} VALUES (1)`);
  const other = watch(pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${tbl}`));
  // As the pool does with a client that failed: destroyed, never returned.
  a.release(new Error('the caller failed'));
  t.same((await other.value).rows[0]!.n, '0', 'the other connection goes on, without the row');
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    t.pass('a new transaction begins (none was left open)');
    await c.query(`INSERT INTO ${tbl} VALUES (2)`);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  t.same((await pool.query<{ x: number }>(`SELECT x FROM ${tbl}`)).rows, [{ x: 2 }], 'only the committed row is there');
});

t.test('connections prepare statements by name independently', async (t) => {
  const a = await pool.connect();
  const b = await pool.connect();
  try {
    for (const c of [a, b, a, b]) {
      const r = await c.query<{ v: number }>({ name: 'store_sessions_next', text: 'SELECT $1::int + 1 AS v', values: [41] });
      t.equal(r.rows[0]!.v, 42, 'the named statement answers');
    }
    // Different text under one name on another connection is that connection's own statement.
    const r = await b.query<{ v: string }>({ name: 'store_sessions_other', text: 'SELECT $1::text AS v', values: ['b'] });
    const s = await a.query<{ v: string }>({ name: 'store_sessions_other', text: "SELECT $1::text || '!' AS v", values: ['a'] });
    t.same([r.rows[0]!.v, s.rows[0]!.v], ['b', 'a!'], 'each connection runs its own text');
  } finally {
    a.release();
    b.release();
  }
});

t.test('autocommit statements of several connections all complete', async (t) => {
  const tbl = await table(pool);
  await Promise.all(Array.from({ length: 20 }, (_, i) => pool.query(`INSERT INTO ${tbl} VALUES ($1)`, [i])));
  t.same((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${tbl}`)).rows[0]!.n, '20', 'every insert ran once');
});

// Embedded, other clients reach the store on a Unix socket in the data directory (an operator's
// psql): their connections are kept apart from the service's in the same way.
t.test('a socket client\'s open transaction does not capture the service\'s statements', { skip: !embedded && 'embedded only (a socket in the data directory)' }, async (t) => {
  const dir = store.dataDir!;
  const tbl = await table(pool);
  const psql = new pg.Client({ host: join(dir, 'run'), port: 5432, user: 'postgres', database: 'postgres' });
  await psql.connect();
  t.teardown(() => psql.end().catch(() => {}));
  await psql.query('BEGIN');
  await psql.query(`INSERT INTO ${tbl} VALUES (1)`);
  const service = watch(pool.query(`INSERT INTO ${tbl} VALUES (2)`));
  t.same((await psql.query<{ x: number }>(`SELECT x FROM ${tbl} ORDER BY x`)).rows, [{ x: 1 }], 'the socket client sees only its own row');
  t.notOk(service.settled(), 'the service\'s statement waits for the socket client\'s transaction');
  await psql.query('ROLLBACK');
  await service.value;
  t.same((await pool.query<{ x: number }>(`SELECT x FROM ${tbl} ORDER BY x`)).rows, [{ x: 2 }], 'the service\'s row was committed on its own, the rolled-back one is gone');
  // psql asks for encryption first; the socket declines and the session starts in the clear.
  const r = spawnSync('psql', ['-h', join(dir, 'run'), '-U', 'postgres', '-d', 'postgres', '-Atc', `SELECT count(*) FROM ${tbl}`], { encoding: 'utf8', timeout: 20_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') t.pass('psql reads the store over the socket', { skip: 'psql is not installed here' });
  else t.equal(r.stdout.trim(), '1', `psql reads the store over the socket${r.stderr ? ` (${r.stderr.trim()})` : ''}`);
});
