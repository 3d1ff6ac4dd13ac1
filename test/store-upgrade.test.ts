// A store that an earlier version left keeps working across the migrations that replace the write
// path's functions. Migration 37 drops headwater_track_fast and creates it again (its answer became
// json: a return type cannot change in place): calls stored by the old function are answered as
// replays by the new one, new calls are written, and the function answers json. Runs on the store
// of the pass: a database of its own on the PostgreSQL server (DATABASE_URL), else embedded Postgres.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { openOwnStore } from '../pipeline/store/own-store.js';
import { PG_MIGRATIONS } from '../pipeline/store/migrations.js';

const ORG = 'org_upgrade', APP = 'app_upgrade', SRC = 'src_upgrade';
const PROFILE = `prf_${'0'.repeat(25)}1`;

/** headwater_track_fast's argument for `n` track calls of PROFILE (pipeline/fast-track.ts builds it so). */
function trackArg(n: number, serial: boolean) {
  const at = new Date().toISOString();
  const rows = Array.from({ length: n }, (_, i) => {
    const m = `m-${randomBytes(8).toString('hex')}`;
    const event = { id: `evt_${randomBytes(8).toString('hex')}`, orgId: ORG, appId: APP, sourceId: SRC, profileId: PROFILE, environment: 'production',
      event: 'Upgraded', properties: { i }, timestamp: at, receivedAt: at, messageId: m };
    return { o: ORG, a: APP, m, r: { event }, p: PROFILE };
  });
  return { rows, arg: JSON.stringify({ lock: !serial, orgs: [{ id: ORG, cv: 0, sv: 0, iv: 0 }], segKeys: [], sources: [SRC], rows, watch: [] }) };
}

t.test('calls stored before migration 37 are replayed after it; new calls are written', async (t) => {
  const before = PG_MIGRATIONS.filter((m) => m.version < 37);
  const m37 = PG_MIGRATIONS.find((m) => m.version === 37)!;
  const s = await openOwnStore({ url: process.env.DATABASE_URL, prefix: 'hw_upgrade', migrations: before });
  t.teardown(() => s.close());
  await s.q(`INSERT INTO orgs (id, name) VALUES ($1, 'upgrade')`, [ORG]);
  await s.q(`INSERT INTO apps (id, org_id, name, environment, created_at, updated_at) VALUES ($1, $2, 'upgrade', 'production', now(), now())`, [APP, ORG]);
  await s.q(`INSERT INTO sources (id, org_id, app_id, kind, created_at, updated_at) VALUES ($1, $2, $3, 'http', now(), now())`, [SRC, ORG, APP]);
  await s.q(`INSERT INTO profiles (id, org_id, app_id, source_id, environment, created_at, updated_at) VALUES ($1, $2, $3, $4, 'production', now(), now())`, [PROFILE, ORG, APP, SRC]);
  const result = async () => (await s.q(`SELECT pg_get_function_result('headwater_track_fast(jsonb)'::regprocedure) AS r`))[0]!.r;
  t.equal(await result(), 'jsonb', 'before: the function answers jsonb');

  const old = trackArg(3, s.serial);
  const first = (await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [old.arg]))[0]!.r as { stale?: boolean; replays: unknown[] };
  t.notOk(first.stale, 'written by the old function');
  t.same(first.replays, [], 'nothing replayed');

  // As the migration runner applies it: its statements in one transaction.
  await s.q('BEGIN');
  for (const sql of m37.statements) await s.q(sql);
  await s.q('COMMIT');
  t.equal(await result(), 'json', 'after: json');

  const again = (await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [old.arg]))[0]!.r as { stale?: boolean; replays: Array<[string, string, string, { event: unknown }]> };
  t.notOk(again.stale);
  t.same(again.replays.map(([o, a, m, r]) => [o, a, m, r.event]).sort((x, y) => String(x[2]).localeCompare(String(y[2]))),
    old.rows.map((r) => [ORG, APP, r.m, r.r.event]).sort((x, y) => String(x[2]).localeCompare(String(y[2]))),
    'the same calls again: each answered with the original the old function stored');

  const fresh = trackArg(2, s.serial);
  const out = (await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [fresh.arg]))[0]!.r as { stale?: boolean; replays: unknown[] };
  t.notOk(out.stale, 'new calls are written');
  t.same(out.replays, []);
  t.equal(Number((await s.q('SELECT count(*) AS n FROM messages WHERE org_id = $1', [ORG]))[0]!.n), 5, 'five stored answers, none twice');
});
