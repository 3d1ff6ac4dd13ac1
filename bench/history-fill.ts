// What filling an event name's segment history costs (pipeline/segments/history.ts, fillHistory):
// the work a segment create or update does under the org's exclusive segment lock when it names an
// event no segment of the org named before. A store of its own (a database created on the server
// DATABASE_URL names, else embedded PGlite), two orgs of N stored track answers each (10 % as many
// profiles), a quarter of them named A; then the fill of A, and of A and B (every event), for one org.
// `node dist/bench/history-fill.js [events] [--embedded]`
import { parseArgs } from 'node:util';
import { openOwnStore } from '../pipeline/store/own-store.js';
import { fillHistory } from '../pipeline/segments/mod.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { embedded: { type: 'boolean', default: false } } });
const N = Math.max(1000, Number(positionals[0] ?? 1_000_000));
const CHUNK = 50_000;

const own = await openOwnStore({ url: values.embedded ? undefined : process.env.DATABASE_URL, prefix: 'hw_fill' });
const s = { q: own.client, what: own.what, close: () => own.close() };

try {
  const profiles = Math.max(1, Math.floor(N / 10));
  for (const org of ['org_fill_a', 'org_fill_b']) {
    await s.q.query('INSERT INTO orgs (id, name) VALUES ($1, $1)', [org]);
    for (let i = 0; i < profiles; i += CHUNK) {
      await s.q.query(`INSERT INTO profiles (id, org_id, app_id, source_id, environment, created_at, updated_at)
        SELECT $1::text || '_p' || g, $1::text, 'app', 'src', 'production', now(), now() FROM generate_series($2::int, least($2::int + ${CHUNK - 1}, $3::int - 1)) g`, [org, i, profiles]);
    }
    // Stored answers as ingestion leaves them (the whole event under `event`).
    for (let i = 0; i < N; i += CHUNK) {
      await s.q.query(`INSERT INTO messages (org_id, app_id, message_id, kind, result)
        SELECT $1::text, 'app', 'm' || g, 'track', jsonb_build_object('event', jsonb_build_object('id', 'evt' || g, 'orgId', $1::text,
          'appId', 'app', 'sourceId', 'src', 'profileId', $1::text || '_p' || (g % $3::int), 'environment', 'production',
          'event', CASE WHEN g % 4 = 0 THEN 'A' ELSE 'B' END, 'properties', jsonb_build_object('path', '/some/page/' || g, 'n', g),
          'timestamp', now() - make_interval(secs => g), 'receivedAt', now(), 'messageId', 'm' || g))
        FROM generate_series($2::int, least($2::int + ${CHUNK - 1}, $4::int - 1)) g`, [org, i, profiles, N]);
      process.stdout.write(`\r${org}: ${Math.min(i + CHUNK, N)} of ${N} stored events`);
    }
    process.stdout.write('\n');
  }
  await s.q.query('ANALYZE');
  process.stdout.write(`history fill on ${s.what}, one org of two, ${N} stored events each, ${profiles} profiles:\n`);
  for (const names of [['A'], ['A', 'B']]) {
    const t0 = performance.now();
    const rows = await fillHistory(s.q, 'org_fill_a', names);
    process.stdout.write(`  names ${names.join(', ')}: ${rows} rows in ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);
  }
} finally {
  await s.close();
}
