// One org's segment change (or promote) does not stall another org's ingestion (PostgreSQL server,
// JetStream and in-process streams). A segment create, update or delete holds its org's segment lock exclusively
// for its whole transaction, and filling the history of a newly named event can take seconds on a
// large org; ingestion takes that lock shared. Here the test holds org A's lock itself, as a long
// segment change does, while org A keeps sending: org B's calls are answered meanwhile (neither the
// workers nor the front door's overload gate make them wait for org A's), org A's only after the
// change ends (or refused 503 by its own gate), each written once. Embedded, one session runs one
// transaction at a time (docs/scaling.md), so the pass is skipped there.
import t, { type Test } from 'tap';
import pg from 'pg';
import { call, createAppFixture, metric, startServer, trackCall, uid, until, type Res, type TestServer } from './helpers/server.js';
import { CATALOG_LOCK, SEGMENT_LOCK, type OrgLock } from './helpers/org-locks.js';

const url = process.env.DATABASE_URL;

/**
 * A change of org A's: the statement that takes its lock exclusively, and whether org A's calls are
 * held in quarantine meanwhile (strict policy: each takes the catalog lock shared, so a promote
 * holding it exclusively stalls them where they run).
 */
interface Change extends OrgLock { strict?: boolean }
const SEGMENT_CHANGE: Change = SEGMENT_LOCK;
const PROMOTE: Change = { ...CATALOG_LOCK, strict: true };

async function stallCase(t: Test, s: TestServer, change = SEGMENT_CHANGE) {
  const a = await createAppFixture(s);
  const b = await createAppFixture(s);
  // Both orgs known to the workers' caches before the change, as on a running service.
  for (const f of [a, b]) t.equal((await trackCall(s, f, { identifiers: { userId: uid('warm') }, event: 'warm' })).status, 201);
  if (change.strict) t.equal((await call(s.url, 'PATCH', '/v1/settings', { token: a.admin, body: { data: { ingestionPolicy: 'strict' } } })).status, 200);
  // What org A's calls are answered once the change ends: written, or held.
  const done = change.strict ? 200 : 201;

  const lock = new pg.Client({ connectionString: s.databaseUrl });
  await lock.connect();
  t.teardown(() => lock.end().catch(() => {}));
  await lock.query('BEGIN');
  await lock.query(change.sql, [change.arg(a.org.org.id)]);
  let held = true;

  // Org A sends while its change runs, one call after another (each its own stream message), each
  // once the server holds the one before (waiting, or refused by org A's gate): enough to fill every
  // batch slot if they waited there.
  const userA = uid('a');
  const sent: Array<Promise<Res>> = [];
  const answeredWhileHeld: number[] = [];
  const withServer = async () => (await metric(s, 'headwater_ingest_waiting_calls')) + answeredWhileHeld.length >= sent.length;
  for (let n = 0; n < 10; n++) {
    const p = trackCall(s, a, { identifiers: { userId: userA }, event: 'during_change', properties: { n } });
    p.then((r) => { if (held) answeredWhileHeld.push(r.status); }, () => {});
    sent.push(p);
    t.ok(await until(withServer, 5_000, 5), `org A's call ${n} is with the server`);
  }

  // Longer than the gate's 200 ms (see below): a gate judging all orgs together would refuse org B now.
  t.ok(await until(async () => (await metric(s, 'headwater_ingest_oldest_wait_seconds')) > 0.3, 5_000, 20), 'org A\'s calls wait past the gate\'s limit');

  // Org B, meanwhile: every call answered while org A's change still holds its lock.
  for (let i = 0; i < 5; i++) {
    const r = await trackCall(s, b, { identifiers: { userId: uid('b') }, event: 'beside_change' });
    t.equal(r.status, 201, `org B's call ${i} answered 201`);
    t.ok(held, `org B's call ${i} answered while org A's change holds its lock`);
  }
  // Its own queue may shut org A's gate meanwhile (503, nothing accepted); none is written.
  t.notOk(answeredWhileHeld.some((x) => x !== 503), `no call of org A written while its change holds the lock (${answeredWhileHeld.length} refused)`);

  held = false;
  await lock.query('COMMIT');
  const results = await Promise.all(sent);
  const written = results.flatMap((r, i) => (r.status === done ? [i] : []));
  t.ok(results.every((r) => r.status === done || r.status === 503), `org A's calls answered ${done} after the change, or refused 503 while it ran`);
  t.ok(written.length >= results.length - answeredWhileHeld.length, `${written.length} of ${results.length} calls of org A written`);
  if (change.strict) {
    t.ok(written.every((i) => results[i]!.body.data.status === 'quarantined'), 'each held');
    return;
  }
  const profile = results[written[0]!]!.body.data.profileId as string;
  const q = new URLSearchParams({ event: 'during_change', profileId: profile, limit: '100' });
  const listed = async () => (await call(s.url, 'GET', `/v1/events?${q}`, { token: a.admin })).body?.data ?? [];
  t.ok(await until(async () => (await listed()).length >= written.length, 15_000, 100), 'org A\'s events landed');
  const ns = (await listed()).map((e: any) => e.properties.n).sort((x: number, y: number) => x - y);
  t.same(ns, written, 'each call of org A answered 201 stored once, none refused stored');
}

if (!url) {
  t.plan(0, 'a PostgreSQL server: embedded, one session runs one transaction at a time');
} else {
  for (const [name, env] of [['JetStream', {}], ['in-process stream', { NATS_URL: '' }]] as const) {
    if (name === 'JetStream' && !process.env.NATS_URL) continue;
    t.test(`${name}: another org's segment change does not hold this org's calls`, async (t) => {
      // A low gate: org A's calls wait longer than this while its change runs, and that must not
      // refuse org B's.
      const s = await startServer(['--ingest-max-wait-ms', '200'], env);
      t.teardown(() => s.close());
      await stallCase(t, s);
      t.ok(await metric(s, 'headwater_ingest_handed_back_calls_total') > 0, 'the calls handed back are counted');
      // A promote or deny holds the org's catalog lock the same way while it takes the held calls out.
      t.test('nor does its promote', (t) => stallCase(t, s, PROMOTE));
    });
  }
}
