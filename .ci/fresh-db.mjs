// Creates (or drops, with --drop NAME) a database on the CI PostgreSQL, so every CI run starts
// from an empty schema whatever earlier runs left behind.
import pg from 'pg';
const admin = process.env.CI_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const c = new pg.Client({ connectionString: admin });
await c.connect();
try {
  if (process.argv[2] === '--drop') {
    await c.query(`DROP DATABASE IF EXISTS ${process.argv[3].replace(/[^a-z0-9_]/g, '')} WITH (FORCE)`);
  } else {
    const name = `headwater_ci_${Date.now().toString(36)}_${process.pid}`;
    await c.query(`CREATE DATABASE ${name}`);
    process.stdout.write(name + '\n');
  }
} finally { await c.end(); }
