// When an org's change begins after the worker asked which orgs are busy (busy-orgs.ts), the batch
// must still not wait for it: on the ingestion workers' sessions (handBackBusyOrgs) every step that
// takes the org's segment or catalog lock shared fails `busy` instead of waiting (migration 41),
// and the driver (pipeline/process.ts) hands that org's calls back while the batch's other calls
// are written. The driver runs here without the watch (as if the change came right after a batch
// asked), through each tier, on a PostgreSQL server (embedded, one session runs one transaction at a time:
// there is nothing to wait beside). Then, the change done, the handed-back calls are written once.
import t, { type Test } from 'tap';
import pg from 'pg';
import { adminCall, call, createAppFixture, startServer, uid, until, type AppFixture } from './helpers/server.js';
import { processBatch, type ProcessContext } from '../pipeline/process.js';
import { BUSY_WATCH_MS, busyOrgs, handBackBusyOrgs } from '../pipeline/busy-orgs.js';
import { SnapshotCache } from '../pipeline/governance/mod.js';
import { SegmentCache } from '../pipeline/segments/mod.js';
import { CATALOG_LOCK, SEGMENT_LOCK, type OrgLock } from './helpers/org-locks.js';
import { IdentityCache } from '../pipeline/identity-cache.js';
import type { IngestCall } from '../pipeline/types.js';

const url = process.env.DATABASE_URL;
if (!url) {
  t.pass('embedded: one session, nothing waits beside it (skipped)');
} else {
  const s = await startServer();
  t.teardown(() => s.close());
  const a = await createAppFixture(s);
  const b = await createAppFixture(s);

  let seq = 0;
  const track = (f: AppFixture, user: string, extra: Partial<IngestCall> = {}): IngestCall => ({
    id: `call_${process.pid}_${seq++}`, kind: 'track', orgId: f.org.org.id, appId: f.app.id, sourceId: f.source.id,
    environment: f.app.environment, receivedAt: Date.now(),
    body: { identifiers: { userId: user }, event: 'busy_test', messageId: uid('msg') }, ...extra,
  });

  /** A worker thread's context, as workers/ingest-task.ts makes it, without the busy watch. */
  const context = (t: Test, o: { fast: boolean }): ProcessContext => {
    const pool = new pg.Pool({ connectionString: s.databaseUrl, max: 4 });
    handBackBusyOrgs(pool);
    t.teardown(() => pool.end());
    return {
      pool, snapshots: new SnapshotCache(), segments: new SegmentCache(), concurrency: 4,
      ...(o.fast ? { identities: new IdentityCache() } : {}),
    };
  };

  /** Holds org A's lock exclusively (as its change does) until the returned function ends it. */
  const holdLock = async (lock: OrgLock) => {
    const c = new pg.Client({ connectionString: s.databaseUrl });
    await c.connect();
    await c.query('BEGIN');
    await c.query(lock.sql, [lock.arg(a.org.org.id)]);
    return async () => { await c.query('COMMIT'); await c.end(); };
  };
  const segmentLock = () => holdLock(SEGMENT_LOCK);
  const catalogLock = () => holdLock(CATALOG_LOCK);

  const reader = new pg.Pool({ connectionString: s.databaseUrl, max: 1 });
  t.teardown(() => reader.end());
  /** How many of the calls' messageIds are stored. */
  const stored = async (calls: IngestCall[]) => (await reader.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM messages WHERE message_id = ANY($1)',
    [calls.map((c) => (c.body as { messageId: string }).messageId)])).rows[0]!.n;

  /**
   * Org A's calls (from `mk`) and org B's in one batch while org A's lock is held: B's written at
   * once, A's handed back unanswered and unwritten; once released, A's written by the next run.
   */
  const handBackCase = async (t: Test, ctx: ProcessContext, mk: () => IngestCall[], lock = segmentLock, answers?: number[]) => {
    const callsA = mk();
    const callsB = [track(b, uid('b')), track(b, uid('b'))];
    const batch = [callsA[0]!, callsB[0]!, ...callsA.slice(1), callsB[1]!];
    // The change ends when the batch is done, or after 2 s: a batch that waits for it shows as
    // late, not as a hung test.
    const release = await lock();
    let finished = false;
    const t0 = Date.now();
    const running = processBatch(ctx, batch).finally(() => { finished = true; });
    const inTime = await until(() => finished, 2_000, 5);
    await release();
    const out = await running;
    t.ok(inTime, `the batch did not wait for org A's change (${Date.now() - t0} ms)`);
    const later = new Set(out.later ?? []);
    batch.forEach((c, i) => {
      if (c.orgId === a.org.org.id) {
        t.ok(later.has(i), `org A's call ${i} handed back`);
        t.equal(out.results[i], undefined, `org A's call ${i} unanswered`);
      } else {
        t.notOk(later.has(i), `org B's call ${i} not handed back`);
        t.equal(out.results[i]?.status, 201, `org B's call ${i} written`);
      }
    });
    t.equal(await stored(callsA), 0, 'nothing of org A\'s calls written');
    // The change done, the calls come again.
    const again = await processBatch(ctx, callsA);
    t.same(again.later ?? [], [], 'none handed back again');
    const want = answers ?? callsA.map(() => 201);
    t.same(again.results.map((r) => r?.status), want, `org A's calls answered ${want.join(', ')}`);
  };

  // Each worker's caches know both orgs (and the fast path their users) before the change, as on a running service.
  const warm = async (ctx: ProcessContext, users: string[]) => {
    const out = await processBatch(ctx, [...users.map((u) => track(a, u)), track(b, uid('b'))]);
    if (out.results.some((r) => r?.status !== 201)) throw new Error(`warm-up: ${JSON.stringify(out.results)}`);
  };

  t.test('fast path: known users and a new one', async (t) => {
    const ctx = context(t, { fast: true });
    const known = uid('a');
    await warm(ctx, [known]);
    await handBackCase(t, ctx, () => [track(a, known), track(a, uid('new')), track(a, known)]);
  });

  t.test('bulk tier', async (t) => {
    const ctx = context(t, { fast: false });
    await warm(ctx, []);
    await handBackCase(t, ctx, () => [track(a, uid('a')), track(a, uid('a'))]);
  });

  t.test('per-call tier: a messageId used twice in the batch keeps lane order', async (t) => {
    const ctx = context(t, { fast: false });
    await warm(ctx, []);
    const user = uid('a');
    await handBackCase(t, ctx, () => {
      const first = track(a, user);
      // The same messageId again: the per-call tier takes the lane, in order.
      return [first, { ...track(a, user), body: { ...(first.body as object), event: 'busy_test' } as IngestCall['body'] }];
    }, segmentLock, [201, 200]);
  });

  t.test('held calls: the catalog lock of a promote', async (t) => {
    const ctx = context(t, { fast: true });
    await warm(ctx, []);
    const r = await call(s.url, 'PATCH', '/v1/settings', { token: a.admin, body: { data: { ingestionPolicy: 'strict' } } });
    t.equal(r.status, 200, 'org A strict');
    t.teardown(() => adminCall(s, a, 'PATCH', '/v1/settings', { ingestionPolicy: 'permissive' }));
    // A name org A's catalog does not know: held (200 quarantined) once the promote is done.
    await handBackCase(t, ctx, () => [track(a, uid('a')), track(a, uid('a'))].map((c) => ({ ...c, body: { ...(c.body as object), event: uid('unknown_event') } as IngestCall['body'] })), catalogLock, [200, 200]);
  });

  /** The worker's watch on a pool of its own, and how many statements it has sent. */
  const watchOf = (t: Test, now?: () => number) => {
    const probes = new pg.Pool({ connectionString: s.databaseUrl, max: 1 });
    t.teardown(() => probes.end());
    const counted = { asked: 0 };
    const query = probes.query.bind(probes) as (...args: unknown[]) => unknown;
    (probes as unknown as { query: typeof query }).query = (...args) => { counted.asked++; return query(...args); };
    return Object.assign(counted, { watch: busyOrgs(probes, now) });
  };

  t.test('the watch: an org found busy is asked about before its batches until its change is done', async (t) => {
    const w = watchOf(t);
    const ctx: ProcessContext = { ...context(t, { fast: true }), busy: w.watch };
    const user = uid('a');
    await warm(ctx, [user]);
    t.equal(w.asked, 0, 'no org found busy yet: nothing asked');
    const batch = () => [track(a, user), track(b, uid('b'))];
    const release = await segmentLock();
    try {
      const first = await processBatch(ctx, batch());
      t.same(first.later, [0], 'org A\'s call handed back by its failed statement');
      t.equal(first.results[1]?.status, 201, 'org B\'s call written');
      t.equal(w.asked, 0, 'not asked: org A was not watched');
      const second = await processBatch(ctx, batch());
      t.same(second.later, [0], 'org A\'s call left out');
      t.equal(second.results[1]?.status, 201, 'org B\'s call written');
      t.equal(w.asked, 1, 'asked once, about the watched org');
    } finally { await release(); }
    const third = await processBatch(ctx, batch());
    t.same(third.later ?? [], [], 'the change done: none handed back');
    t.same(third.results.map((r) => r?.status), [201, 201], 'both written');
    t.equal(w.asked, 2, 'asked once more, and found done');
    await processBatch(ctx, batch());
    t.equal(w.asked, 2, 'forgotten: not asked again');
  });

  t.test('the watch ends when no batch found the org busy for a while', async (t) => {
    let now = 1_000_000;
    const w = watchOf(t, () => now);
    w.watch.saw([a.org.org.id]);
    now += BUSY_WATCH_MS - 1;
    t.equal((await w.watch.check([a.org.org.id, b.org.org.id])).size, 0, 'watched, not busy');
    t.equal(w.asked, 1, 'asked about the watched org');
    t.equal((await w.watch.check([a.org.org.id])).size, 0, 'not busy');
    t.equal(w.asked, 1, 'found done: forgotten');
    w.watch.saw([a.org.org.id]);
    now += BUSY_WATCH_MS;
    t.equal((await w.watch.check([a.org.org.id])).size, 0, 'the watch ended');
    t.equal(w.asked, 1, 'not asked once the watch ended');
  });
}
