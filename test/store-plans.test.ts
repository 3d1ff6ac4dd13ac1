// The write path's functions (headwater_track_fast, headwater_bulk_begin/write) probe their tables by
// key however small the planner believes them. PL/pgSQL keeps a statement's plan for the session,
// costed with the table sizes of the moment it was made: a plan made on a small table scanned the
// whole table once it grew (migration 32 says what that cost). Measured through Postgres's own
// counters: after the fast path ran on a store whose statistics say "40 profiles", no call scans
// profiles or messages sequentially, also once the table holds thousands more. Runs on the store of
// the pass: a database of its own on the PostgreSQL server (DATABASE_URL), else embedded Postgres.
// Also: the fast path writes segment history only for the names its caller says keep it (migration 33),
// a new profile's identifier that conflicts under its lock fails as a concurrency failure (36), and
// one owned before defers its lane only, the others written (40).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { openOwnStore } from '../pipeline/store/own-store.js';

/** A migrated, empty store of its own; `close` removes it. */
const openStore = () => openOwnStore({ url: process.env.DATABASE_URL, prefix: 'hw_plans' });

const ORG = 'org_plans', APP = 'app_plans', SRC = 'src_plans';
const iso = () => new Date().toISOString();

/** headwater_track_fast's argument for track calls of known profiles (pipeline/fast-track.ts builds it so). */
function trackArg(profiles: string[], serial: boolean, watch: string[] = []) {
  const rows = profiles.map((p) => {
    const m = `m-${randomBytes(8).toString('hex')}`;
    const event = { id: `evt_${randomBytes(8).toString('hex')}`, orgId: ORG, appId: APP, sourceId: SRC, profileId: p, environment: 'production',
      event: 'Page Viewed', properties: {}, timestamp: iso(), receivedAt: iso(), messageId: m };
    return { o: ORG, a: APP, m, r: { event }, p };
  });
  return JSON.stringify({ lock: !serial, orgs: [{ id: ORG, cv: 0, sv: 0, iv: 0 }], segKeys: [], sources: [SRC], rows, watch });
}

/** A store with one org, app and source, and `addProfiles` to add numbered profiles. */
async function seeded() {
  const s = await openStore();
  await s.q(`INSERT INTO orgs (id, name) VALUES ($1, 'plans')`, [ORG]);
  await s.q(`INSERT INTO apps (id, org_id, name, environment, created_at, updated_at) VALUES ($1, $2, 'plans', 'production', now(), now())`, [APP, ORG]);
  await s.q(`INSERT INTO sources (id, org_id, app_id, kind, created_at, updated_at) VALUES ($1, $2, $3, 'http', now(), now())`, [SRC, ORG, APP]);
  const addProfiles = (n: number, from: number) => s.q(
    `INSERT INTO profiles (id, org_id, app_id, source_id, environment, created_at, updated_at)
     SELECT 'prf_' || lpad(i::text, 26, '0'), $1, $2, $3, 'production', now(), now() FROM generate_series($4::int, $5::int) i`, [ORG, APP, SRC, from, from + n - 1]);
  return { ...s, addProfiles };
}
const profile = (i: number) => `prf_${String(i).padStart(26, '0')}`;

t.test('the track fast path writes segment history only for the names it is told keep it', async (t) => {
  const s = await seeded();
  t.teardown(() => s.close());
  await s.addProfiles(3, 1);
  const history = async () => Number((await s.q('SELECT count(*) AS n FROM event_history'))[0]!.n);
  const cases: Array<[string, string[], number]> = [
    ['no name kept', [], 0],
    ['another org\'s name', [`org_other\u0001Page Viewed`], 0],
    ['another name', [`${ORG}\u0001Signed Up`], 0],
    ['its name', [`${ORG}\u0001Page Viewed`], 3],
  ];
  for (const [what, watch, rows] of cases) {
    const before = await history();
    const out = await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [trackArg([profile(1), profile(2), profile(3)], s.serial, watch)]);
    t.notOk((out[0]!.r as { stale?: boolean }).stale, `${what}: written`);
    t.equal(await history() - before, rows, `${what}: ${rows} history rows`);
  }
});

t.test('the track fast path probes profiles and messages by key, planned on a small store or not', async (t) => {
  const s = await seeded();
  t.teardown(() => s.close());
  const { addProfiles } = s;
  await addProfiles(40, 1);
  for (const table of ['profiles', 'messages', 'identifiers', 'event_history']) await s.q(`ANALYZE ${table}`);

  const scans = async () => {
    await s.q('SELECT pg_stat_force_next_flush()');
    const rows = await s.q(`SELECT relname, seq_scan::int AS seq, idx_scan::int AS idx FROM pg_stat_user_tables WHERE relname IN ('profiles', 'messages')`);
    return Object.fromEntries(rows.map((r) => [r.relname as string, { seq: r.seq as number, idx: r.idx as number }]));
  };
  const call = async (n: number) => {
    const out = await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [trackArg(Array.from({ length: n }, (_, i) => profile(1 + (i % 40))), s.serial)]);
    t.notOk((out[0]!.r as { stale?: boolean }).stale, 'the statement wrote (not stale)');
  };

  const before = await scans();
  // Past PL/pgSQL's five custom plans: the generic plan is the one kept.
  for (let i = 0; i < 8; i++) await call(20);
  const small = await scans();
  t.equal(small.messages!.seq - before.messages!.seq, 0, 'no sequential scan of messages while the store is small');
  if (!s.serial) t.equal(small.profiles!.seq - before.profiles!.seq, 0, 'the profile locks probe the primary key, not a scan of 40 rows');

  await addProfiles(5_000, 41);
  const grown0 = await scans();
  await call(20);
  const grown = await scans();
  t.equal(grown.messages!.seq - grown0.messages!.seq, 0, 'no sequential scan of messages after the growth');
  t.equal(grown.profiles!.seq - grown0.profiles!.seq, 0, 'no sequential scan of 5,040 profiles with the plan made on 40');
  t.ok(grown.messages!.idx > grown0.messages!.idx, 'the counters count (messages were probed by index)');
});

/** The argument for track calls that each create a profile: lane n's profile and its identifier (userId). */
function bornArg(userIds: string[], lock = true) {
  const t = iso();
  const lanes = userIds.map((u, n) => ({ n, u, id: `prf_born_${randomBytes(8).toString('hex')}`, m: `m-${randomBytes(8).toString('hex')}` }));
  return JSON.stringify({
    lock, orgs: [{ id: ORG, cv: 0, sv: 0, iv: 0 }], segKeys: [], sources: [SRC], watch: [],
    rows: lanes.map((l) => ({ o: ORG, a: APP, m: l.m, n: l.n, r: { event: {
      id: `evt_${randomBytes(8).toString('hex')}`, orgId: ORG, appId: APP, sourceId: SRC, profileId: l.id, environment: 'production',
      event: 'Page Viewed', properties: {}, timestamp: t, receivedAt: t, messageId: l.m } } })),
    born: lanes.map((l) => ({ n: l.n, id: l.id, o: ORG, a: APP, s: SRC, e: 'production', t })),
    bornIds: lanes.map((l) => ({ n: l.n, o: ORG, a: APP, k: 'userId', v: l.u, p: l.id, t })),
    locks: [...new Set(lanes.map((l) => String(BigInt.asIntN(64, BigInt(`0x${Buffer.from(l.u).toString('hex').padEnd(16, '0').slice(0, 16)}`)))))],
  });
}

t.test('new profiles\' identifiers under their locks: a conflict fails the statement as a concurrency failure', async (t) => {
  const s = await seeded();
  t.teardown(() => s.close());
  const count = async (table: string) => Number((await s.q(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  const cases: Array<[string, string[], 'written' | '40001']> = [
    ['two identifiers', ['born-a', 'born-b'], 'written'],
    // Two lanes claiming one identifier stand for a writer that inserted it without the lock.
    ['one identifier claimed twice', ['born-c', 'born-c'], '40001'],
  ];
  for (const [what, users, want] of cases) {
    const before = { profiles: await count('profiles'), identifiers: await count('identifiers'), messages: await count('messages') };
    const out = await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [bornArg(users)]).then(
      (rows) => ({ ok: rows[0]!.r as { stale?: boolean } }), (err: { code?: string; message?: string }) => ({ err }));
    const after = { profiles: await count('profiles'), identifiers: await count('identifiers'), messages: await count('messages') };
    if (want === 'written') {
      t.ok('ok' in out && !out.ok.stale, `${what}: written`);
      t.same(after, { profiles: before.profiles + users.length, identifiers: before.identifiers + users.length, messages: before.messages + users.length }, `${what}: a profile, identifier and message per call`);
    } else {
      t.equal('err' in out ? out.err.code : 'none', '40001', `${what}: SQLSTATE 40001 (the caller defers the calls)`);
      t.match('err' in out ? out.err.message : '', /an identifier appeared under its lock/, `${what}: says why`);
      t.same(after, before, `${what}: nothing written`);
    }
  }
});

t.test('new profiles whose identifier is owned already: only their lanes are deferred, with the owners', async (t) => {
  const s = await seeded();
  t.teardown(() => s.close());
  await s.addProfiles(1, 900);
  const count = async (table: string) => Number((await s.q(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  const snapshot = async () => ({ profiles: await count('profiles'), identifiers: await count('identifiers'), messages: await count('messages') });
  // [what, the users of the lanes (owned ones start with "owned"), locking]
  const cases: Array<[string, string[], boolean]> = [
    ['none owned, one session', ['fresh-1', 'fresh-2', 'fresh-3'], false],
    ['none owned, locking', ['fresh-4', 'fresh-5'], true],
    ['the first owned, one session', ['owned-1', 'fresh-6', 'fresh-7'], false],
    ['the last owned, locking', ['fresh-8', 'owned-2'], true],
    ['every one owned', ['owned-3', 'owned-4'], false],
  ];
  for (const [what, users, lock] of cases) {
    for (const u of users.filter((x) => x.startsWith('owned'))) {
      await s.q(`INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at) VALUES ($1, $2, 'userId', $3, $4, now())`, [ORG, APP, u, profile(900)]);
    }
    const owned = users.flatMap((u, n) => (u.startsWith('owned') ? [n] : []));
    const before = await snapshot();
    const out = (await s.q('SELECT headwater_track_fast($1::jsonb) AS r', [bornArg(users, lock)]))[0]!.r as { deferred: number[]; owners: unknown[]; replays: unknown[] };
    const after = await snapshot();
    const written = users.length - owned.length;
    t.same([...out.deferred].sort(), owned, `${what}: the owned lanes deferred`);
    t.same(out.owners, owned.map((n) => [ORG, APP, 'userId', users[n], profile(900)]), `${what}: their owners reported`);
    t.same(out.replays, [], `${what}: nothing replayed`);
    t.same(after, { profiles: before.profiles + written, identifiers: before.identifiers + written, messages: before.messages + written },
      `${what}: a profile, identifier and message per lane written, nothing for the deferred`);
  }
});
