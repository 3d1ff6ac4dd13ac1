// Embedded Postgres runs no autovacuum, so headwater's own loop (pipeline/store/vacuum.ts) vacuums a
// table once updates left enough dead rows, and leaves a quiet table alone; and it freezes tables
// whose oldest transaction IDs passed the freeze age (here lowered to a few hundred), as autovacuum
// does against wraparound. Checked against embedded
// PGlite, and against the Postgres server when DATABASE_URL is set (a database of this test's own;
// the server's autovacuum is off for the test's tables).
import t from 'tap';
import { startVacuum } from '../pipeline/store/vacuum.js';
import { createLogger } from '../lib/log.js';
import { ownStorePool } from './helpers/db.js';
import { poll } from './helpers/server.js';

const log = createLogger('silent');
const pool = await ownStorePool(t);

const stats = async (table: string) => (await pool.query(
  `SELECT n_dead_tup::int AS dead, last_vacuum, last_analyze FROM pg_stat_user_tables WHERE relname = $1`, [table])).rows[0];

t.test('a table with many dead rows is vacuumed; a quiet one is not', async (t) => {
  const busy = `vac_busy_${Math.random().toString(36).slice(2, 8)}`;
  const quiet = `vac_quiet_${Math.random().toString(36).slice(2, 8)}`;
  await pool.query(`CREATE TABLE ${busy} (id int PRIMARY KEY, v int NOT NULL) WITH (autovacuum_enabled = false)`);
  await pool.query(`CREATE TABLE ${quiet} (id int PRIMARY KEY, v int NOT NULL) WITH (autovacuum_enabled = false)`);
  await pool.query(`INSERT INTO ${busy} SELECT g, 0 FROM generate_series(1, 2000) g`);
  await pool.query(`INSERT INTO ${quiet} SELECT g, 0 FROM generate_series(1, 2000) g`);
  // Let both be vacuumed and analyzed once (their inserts count as changes), then churn only one.
  await pool.query(`VACUUM (ANALYZE) ${busy}`);
  await pool.query(`VACUUM (ANALYZE) ${quiet}`);
  const quietBefore = await stats(quiet);
  for (let i = 0; i < 3; i++) await pool.query(`UPDATE ${busy} SET v = v + 1`);
  await pool.query(`UPDATE ${quiet} SET v = v + 1 WHERE id <= 10`);
  const busyBefore = await stats(busy);

  const vacuum = startVacuum({ pool, log, intervalMs: 100 });
  t.teardown(() => vacuum.close());
  const after = await poll(() => stats(busy),
    (s) => Boolean(s?.last_vacuum && (!busyBefore.last_vacuum || s.last_vacuum > busyBefore.last_vacuum)), 30_000);
  t.ok(after.last_vacuum > busyBefore.last_vacuum, 'the churned table was vacuumed again');
  t.ok(after.dead < 100, `dead rows of the churned table cleared (${after.dead} left)`);
  const analyzed = await poll(() => stats(busy), (s) => Boolean(s?.last_analyze && s.last_analyze > busyBefore.last_analyze), 30_000);
  t.ok(analyzed.last_analyze > busyBefore.last_analyze, 'and analyzed');
  // The smaller sample is set for the analyze alone: the session the service shares keeps its default.
  t.equal((await pool.query('SHOW default_statistics_target')).rows[0].default_statistics_target, '100');
  const q = await stats(quiet);
  t.same(q.last_vacuum, quietBefore.last_vacuum, 'the quiet table (10 of 2,000 rows changed) was not vacuumed');
  await vacuum.close();
});

t.test('tables older than the freeze age are frozen, catalogs included; younger ones are left alone', async (t) => {
  const old = `vac_old_${Math.random().toString(36).slice(2, 8)}`;
  const young = `vac_young_${Math.random().toString(36).slice(2, 8)}`;
  await pool.query(`CREATE TABLE ${old} (id int PRIMARY KEY) WITH (autovacuum_enabled = false)`);
  await pool.query(`INSERT INTO ${old} SELECT generate_series(1, 1000)`);
  // 400 transactions, each with an ID of its own: the table's rows are that much older than now.
  for (let i = 0; i < 400; i++) await pool.query('SELECT pg_current_xact_id()');
  // The transaction ID (32 bits) of now: a frozen table's oldest unfrozen ID is at least this.
  const now = Number(BigInt((await pool.query('SELECT pg_current_xact_id()::text AS x')).rows[0].x) & 0xffffffffn);
  await pool.query(`CREATE TABLE ${young} (id int PRIMARY KEY) WITH (autovacuum_enabled = false)`);
  await pool.query(`INSERT INTO ${young} SELECT generate_series(1, 1000)`);
  const frozenXid = async (table: string) => Number((await pool.query(
    `SELECT relfrozenxid::text AS x FROM pg_class WHERE oid = $1::regclass`, [table])).rows[0].x);
  t.ok(await frozenXid(old) < now, 'the old table holds IDs older than now');

  const vacuum = startVacuum({ pool, log, intervalMs: 100, freezeMaxAge: 300 });
  t.teardown(() => vacuum.close());
  const got = await poll(() => frozenXid(old), (x) => x >= now, 60_000);
  t.ok(got >= now, `the old table was frozen (its oldest unfrozen ID ${got} >= ${now})`);
  const catalog = await poll(async () => Number((await pool.query(`SELECT relfrozenxid::text AS x FROM pg_class WHERE relname = 'pg_class'`)).rows[0].x),
    (x) => x >= now, 60_000);
  t.ok(catalog >= now, 'and so was the catalog pg_class');
  await vacuum.close();
  // Embedded, nothing else runs transactions: the young table stayed below the age and was left
  // alone. (A server's other databases use transaction IDs meanwhile, so it may have aged past it.)
  if (!process.env.DATABASE_URL) {
    const s = await stats(young);
    t.equal(s.last_vacuum, null, 'the young table was not vacuumed');
  }
});

