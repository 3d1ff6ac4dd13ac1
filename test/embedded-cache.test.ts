// HEADWATER_EMBEDDED_CACHE_MB sizes embedded PostgreSQL's page cache (docs/operations.md): the
// server started with it reports that shared_buffers, and one started without it PostgreSQL's 128 MB.
// Always embedded (the setting is unused with DATABASE_URL).
import t from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { startServer } from './helpers/server.js';
import { EMBEDDED_ENV } from './helpers/modes.js';

const EMBEDDED = EMBEDDED_ENV;

for (const [what, env, want] of [
  ['the default', {}, '128MB'],
  ['48 MiB', { HEADWATER_EMBEDDED_CACHE_MB: '48' }, '48MB'],
] as const) {
  t.test(what, async (t) => {
    const s = await startServer([], { ...EMBEDDED, ...env });
    t.teardown(() => s.close());
    const pool = new pg.Pool({ host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
    t.teardown(() => pool.end());
    t.equal((await pool.query('SHOW shared_buffers')).rows[0].shared_buffers, want, 'shared_buffers');
    const r = await fetch(`${s.url}/health/ready`);
    t.equal(r.status, 200, 'the server is ready');
  });
}
