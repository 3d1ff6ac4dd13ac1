// Activation outcomes saved in one batch (journeys/executions/save.ts) against a real store: the
// Postgres server when DATABASE_URL is set (a database of this test's own), else embedded PGlite.
// Every kind of outcome lands as the runner defines it, an outcome of a lease that is no longer the
// row's changes nothing, and an outcome the store refuses fails alone while the rest of its batch lands.
import t from 'tap';
import { createSaver, type Outcome, type SaveInput } from '../journeys/executions/save.js';
import { ownStorePool } from './helpers/db.js';

// A store with headwater's schema, of this test's own.
const pool = await ownStorePool(t);

let n = 0;
/** A running execution leased by `lease`; its inbox as given. */
async function leased(lease: string, inbox: unknown[] = []): Promise<string> {
  const id = `exe_save_${++n}_${Math.random().toString(36).slice(2, 8)}`;
  await pool.query(
    `INSERT INTO executions (id, org_id, journey_key, version_id, release_id, app_id, source_id, profile_id, environment,
       trigger_event_id, run_id, event, status, wake_at, lease_until, lease_id, attempts, inbox, started_at, updated_at)
     VALUES ($1, 'org_save', 'j', 'ver', 'rel', 'app', 'src', $1, 'production', $1, 'run_1', '{"event":"go"}', 'running', now(),
       now() + interval '1 minute', $2, 3, $3::jsonb, now(), now())`, [id, lease, JSON.stringify(inbox)]);
  return id;
}
const row = async (id: string) => (await pool.query(
  `SELECT *, EXTRACT(EPOCH FROM (wake_at - now())) AS wake_in_s FROM executions WHERE id = $1`, [id])).rows[0];
const logsOf = async (id: string) => (await pool.query(
  `SELECT run_seq, seq, level, message FROM execution_logs WHERE execution_id = $1 ORDER BY seq`, [id])).rows;

const stats = { replayed: 0, hostCalls: 1, fuelUsed: 1, wallMs: 1 };
const entry = (name: string) => ({ call: { name, args: [] }, result: { ok: true as const, value: null }, at: 0, recordedAt: new Date().toISOString() });
const journal = [entry('traits.set')] as unknown as Outcome['journal'];
const base = { journal, logs: [{ seq: 0, level: 'info', message: 'hello' }], stats } as unknown as Omit<Outcome, 'status'>;
const sleepCall = { name: 'sleep', args: ['1h'] } as unknown as never;

t.test('one batch: every kind of outcome lands as defined', async (t) => {
  const saver = createSaver(pool);
  const began = Date.now() - 1000;
  const later = Date.now() + 3_600_000;
  const ids = {
    completed: await leased('L'), failed: await leased('L'), sleep: await leased('L'),
    event: await leased('L', [{ event: 'paid', receivedAt: new Date(began + 10).toISOString(), id: 'evt_1' }]),
    restart: await leased('L'), retry: await leased('L'), deferred: await leased('L'), stale: await leased('OTHER'),
  };
  const input = (id: string, outcome: Outcome): SaveInput => ({ id, leaseId: 'L', runSeq: 0, attempts: 3, began, outcome });
  await Promise.all([
    saver.save(input(ids.completed, { ...base, status: 'completed' } as Outcome)),
    saver.save(input(ids.failed, { ...base, status: 'failed', code: 'journey_error', message: 'boom' } as Outcome)),
    saver.save(input(ids.sleep, { ...base, status: 'waiting', wait: { kind: 'sleep', until: later, position: 1, call: sleepCall } } as Outcome)),
    saver.save(input(ids.event, { ...base, status: 'waiting', wait: { kind: 'event', names: ['paid'], until: later, position: 1, call: { name: 'waitForEvent', args: [] } } } as unknown as Outcome)),
    saver.save(input(ids.restart, { ...base, status: 'restart', position: 1, call: sleepCall, event: { event: 'again' }, delayMs: 2000 } as Outcome)),
    saver.save(input(ids.retry, { ...base, status: 'retry', position: 1, message: 'outage' } as Outcome)),
    saver.save(input(ids.deferred, { ...base, status: 'retry', position: 1, message: 'quiet hours', deferUntil: later } as Outcome)),
    saver.save(input(ids.stale, { ...base, status: 'completed' } as Outcome)),
  ]);

  const c = await row(ids.completed);
  t.match(c, { status: 'completed', journal_entries: 1, step: 'traits.set', lease_id: null, lease_until: null, error: null, attempts: 0, wake_at: null });
  t.ok(c.ended_at, 'completed: ended');
  t.same(await logsOf(ids.completed), [{ run_seq: 0, seq: 0, level: 'info', message: 'hello' }], 'completed: its logs stored');

  const f = await row(ids.failed);
  t.match(f, { status: 'failed', error: 'journey_error: boom', attempts: 3, wake_at: null });
  t.ok(f.ended_at, 'failed: ended');

  const s = await row(ids.sleep);
  t.match(s, { status: 'waiting', step: 'sleep', wake_value: null, attempts: 0, ended_at: null });
  t.equal(new Date(s.wake_at).getTime(), later, 'sleep: due at its deadline');
  t.equal(new Date(s.timer_deadline).getTime(), later);
  t.equal(s.wait.began, began, 'sleep: the wait remembers when the activation began');

  const e = await row(ids.event);
  t.match(e, { status: 'waiting', step: 'waitForEvent', wake_value: { event: 'paid', id: 'evt_1' } }, 'event wait: answered from the inbox');
  t.ok(Number(e.wake_in_s) <= 0, 'event wait: due now');
  t.same(e.inbox, [], 'inbox emptied');

  const r = await row(ids.restart);
  t.match(r, { status: 'running', run_seq: 1, step: 'restart', journal_entries: 0, event: { event: 'again' } });
  t.same(r.journal, []);
  t.not(r.run_id, 'run_1', 'restart: a new run');
  t.ok(Number(r.wake_in_s) > 1 && Number(r.wake_in_s) <= 2.1, 'restart: after its delay');

  const y = await row(ids.retry);
  t.match(y, { status: 'running', attempts: 3, journal_entries: 1, lease_id: null });
  t.ok(Number(y.wake_in_s) > 3 && Number(y.wake_in_s) <= 4.1, 'retry: 0.5 s doubled per attempt (3 -> 4 s)');

  const d = await row(ids.deferred);
  t.match(d, { status: 'waiting', step: 'email.send', wait: null, attempts: 0 });
  t.equal(new Date(d.wake_at).getTime(), later, 'deferred: due when quiet hours end');

  const st = await row(ids.stale);
  t.match(st, { status: 'running', lease_id: 'OTHER', journal_entries: 0 }, 'another lease: unchanged');
  t.same(await logsOf(ids.stale), [], 'another lease: no logs');
});

t.test('an outcome the store refuses fails alone; the rest of its batch lands', async (t) => {
  const saver = createSaver(pool);
  const good1 = await leased('L'), bad = await leased('L'), good2 = await leased('L');
  const input = (id: string, message: string): SaveInput => ({
    id, leaseId: 'L', runSeq: 0, attempts: 0, began: Date.now(),
    outcome: { ...base, logs: [{ seq: 0, level: 'info', message }], status: 'completed' } as unknown as Outcome,
  });
  const results = await Promise.allSettled([saver.save(input(good1, 'fine')), saver.save(input(bad, 'nul \u0000 byte')), saver.save(input(good2, 'fine too'))]);
  t.same(results.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
  t.equal((await row(good1)).status, 'completed');
  t.equal((await row(good2)).status, 'completed');
  t.match(await row(bad), { status: 'running', lease_id: 'L' }, 'the refused one keeps its lease (it runs again when the lease expires)');
});
