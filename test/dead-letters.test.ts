// A call that fails on its own, every time, while the stores work: the rest of its batch is still
// answered and written, and the call is kept as a dead letter (answered 500 `internal`) instead of
// coming back from the stream forever. The failure is real: a Postgres trigger that refuses the
// messages rows of one test's messageIds (SQLSTATE XX001), installed over a direct connection.
import t, { type Test } from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startServer, call, createAppFixture, poll, uid, trackCall, type AppFixture } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const dbUrl = process.env.DATABASE_URL;
const pool = dbUrl ? new pg.Pool({ connectionString: dbUrl, max: 2 })
  : s.dataDir ? new pg.Pool({ host: join(s.dataDir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 2 }) : undefined;
if (pool) t.teardown(() => pool.end());

const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);

/**
 * Installs a trigger that refuses the messages rows whose messageId starts with the returned prefix
 * (SQLSTATE XX001); `drop` removes it (also at the test's end).
 */
async function poison(t: Test): Promise<{ prefix: string; drop(): Promise<void> }> {
  const tag = randomBytes(6).toString('hex');
  const prefix = `poison-${tag}-`;
  const fn = `test_poison_${tag}`;
  await pool!.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.message_id LIKE '${prefix}%' THEN RAISE EXCEPTION 'poisoned by the test' USING ERRCODE = 'XX001'; END IF;
      RETURN NEW;
    END $$`);
  await pool!.query(`CREATE TRIGGER ${fn} BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await pool!.query(`DROP TRIGGER IF EXISTS ${fn} ON messages`);
    await pool!.query(`DROP FUNCTION IF EXISTS ${fn}()`);
  };
  t.teardown(drop);
  return { prefix, drop };
}

t.test('a poisoned call is kept as a dead letter; the rest of its batch is written', { skip: !pool && 'no direct database access' }, async (t) => {
  const f = await createAppFixture(s);
  const { prefix, drop } = await poison(t);

  const user = uid('user');
  const bad = `${prefix}1`;
  const ok = [uid('m'), uid('m')];
  const b = await call(s.url, 'POST', '/v1/batch', { token: f.key, body: { data: { sourceId: f.source.id, calls: [
    { type: 'track', identifiers: { userId: user }, event: 'Fine', messageId: ok[0] },
    { type: 'track', identifiers: { userId: user }, event: 'Fine', messageId: bad },
    { type: 'track', identifiers: { userId: user }, event: 'Fine', messageId: ok[1] },
  ] } } });
  t.equal(b.status, 200, b.text.slice(0, 300));
  t.same(b.body.data.map((x: any) => x.status), [201, 500, 201], 'the others are written');
  t.equal(b.body.data[1].error.code, 'internal');
  t.match(b.body.data[1].error.message, /dead letter/);

  const kept = await pool!.query(`SELECT org_id, call, error, attempts FROM dead_letters WHERE call->'body'->>'messageId' = $1`, [bad]);
  t.equal(kept.rows.length, 1, 'kept once');
  t.equal(kept.rows[0].org_id, f.org.org.id);
  t.equal(kept.rows[0].call.body.event, 'Fine', 'with the call');
  t.match(kept.rows[0].error, /^XX001: poisoned by the test/, 'and its error');

  const profile = b.body.data[0].data.profileId;
  const evs = await poll(() => call(s.url, 'GET', `/v1/events?profileId=${profile}&limit=100`, { token: f.admin }), (r) => (r.body?.data?.length ?? 0) >= 2);
  t.same((evs.body.data as any[]).map((e) => e.messageId).sort(), [...ok].sort(), 'the two good events are stored, the poisoned one is not');

  const alone = await track(f, { identifiers: { userId: user }, event: 'Fine', messageId: `${prefix}2` });
  t.equal(alone.status, 500, 'a call alone in its batch too');
  t.equal(alone.body.error.code, 'internal');

  // Once the cause is gone, the call was never applied: sent again, it is new.
  await drop();
  const again = await track(f, { identifiers: { userId: user }, event: 'Fine', messageId: bad });
  t.equal(again.status, 201, 'written now');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Fine', messageId: bad })).status, 200, 'and then a replay');
});

t.test('a batch that failed after some of it was written emits those events from its second run', { skip: !pool && 'no direct database access' }, async (t) => {
  // Embedded, the first call is written by the fast path (its user and org are known to the process
  // after the warm-up) before the identify, which the fast path does not take (it unsets a trait),
  // fails on its own; the batch then runs call by call and the first call is a replay there, whose
  // event nothing else would land.
  const f = await createAppFixture(s);
  const { prefix } = await poison(t);
  const user = uid('user');
  for (let i = 0; i < 2; i++) t.equal((await track(f, { identifiers: { userId: user }, event: 'Warm' })).status, 201);
  const first = uid('m');
  const b = await call(s.url, 'POST', '/v1/batch', { token: f.key, body: { data: { sourceId: f.source.id, calls: [
    { type: 'track', identifiers: { userId: user }, event: 'Kept', messageId: first },
    { type: 'identify', identifiers: { userId: uid('other') }, unset: ['plan'], messageId: `${prefix}1` },
  ] } } });
  t.equal(b.status, 200, b.text.slice(0, 300));
  t.ok([200, 201].includes(b.body.data[0].status), `the track answered (${b.body.data[0].status}: 200 when written by the first run)`);
  t.equal(b.body.data[1].status, 500, 'the identify is a dead letter');
  const profile = b.body.data[0].data.profileId;
  const evs = await poll(() => call(s.url, 'GET', `/v1/events?profileId=${profile}&event=Kept&limit=10`, { token: f.admin }), (r) => (r.body?.data?.length ?? 0) >= 1, 10_000);
  t.same((evs.body.data as any[]).map((e) => e.messageId), [first], 'its event landed, once');
});
