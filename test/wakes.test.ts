// Work notifications between processes sharing one PostgreSQL database (pipeline/wakes.ts): what
// one process tells reaches the others' loops, not its own; tells within the coalescing window
// become one notification; a lost LISTEN connection makes the loops poll (they are woken to pick
// their rest again) until it is back, and then every loop looks once. Against a real PostgreSQL
// server (a database of the test's own: notifications are per database); needs DATABASE_URL.
import t from 'tap';
import pg from 'pg';
import { listenWakes, type WakeTopic, type Wakes } from '../pipeline/wakes.js';
import { createLogger } from '../lib/log.js';
import { ownDatabase } from './helpers/db.js';
import { poll } from './helpers/server.js';

const url = await ownDatabase(t);
if (!url) {
  t.plan(0, 'needs DATABASE_URL');
} else {
  const log = createLogger('error');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  t.teardown(() => pool.end());

  /** Counts each topic's wakes of one process. */
  const counter = (w: Wakes) => {
    const n = new Map<WakeTopic, number>();
    for (const topic of ['compile', 'erase', 'journeys', 'webhooks', 'email', 'suppressions'] as const) {
      n.set(topic, 0);
      w.on(topic, () => n.set(topic, n.get(topic)! + 1));
    }
    return (topic: WakeTopic) => n.get(topic)!;
  };
  const open = async () => {
    const w = await listenWakes({ connectionString: url, pool, log, coalesceMs: 30, retryMs: 50 });
    t.teardown(() => w.close());
    return w;
  };

  const a = await open();
  const b = await open();
  const na = counter(a);
  const nb = counter(b);

  t.test('both listen once connected', async (t) => {
    t.equal(a.listening, true);
    t.equal(b.listening, true);
    t.equal(a.idleMs, 15_000, 'the default longest rest on a shared server');
  });

  t.test('a tell reaches the other process, not the one that told', async (t) => {
    a.tell('journeys');
    await poll(async () => nb('journeys'), (v) => v === 1);
    // Notifications on one channel arrive in commit order: once b's answer reached a, a's own
    // notification (sent before) would have too.
    b.tell('erase');
    await poll(async () => na('erase'), (v) => v === 1);
    t.equal(na('journeys'), 0, 'the telling process is not woken by its own notification');
    t.equal(nb('erase'), 0);
  });

  t.test('tells within the window become one notification per topic', async (t) => {
    const before = nb('webhooks');
    for (let i = 0; i < 20; i++) a.tell('webhooks');
    a.tell('email');
    await poll(async () => nb('email'), (v) => v === 1);
    // The next tell is a later notification: once it arrived, every earlier one had.
    a.tell('compile');
    await poll(async () => nb('compile'), (v) => v === 1);
    t.equal(nb('webhooks') - before, 1, '20 tells in one window woke the other process once');
  });

  t.test('a lost LISTEN connection: loops poll meanwhile, and look once when it is back', async (t) => {
    const before = nb('suppressions');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.teardown(() => admin.end());
    const killed = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN headwater_work'`);
    t.equal(killed.rowCount, 2, 'both listeners were ended');
    // Each loop is woken when listening stops (it then rests the poll interval) and when it is back.
    await poll(async () => nb('suppressions') - before, (v) => v >= 2, 10_000);
    await poll(async () => a.listening && b.listening, (v) => v, 10_000);
    const journeys = nb('journeys');
    a.tell('journeys');
    await poll(async () => nb('journeys'), (v) => v === journeys + 1);
    t.pass('notifications flow again after the reconnect');
  });

  t.test('close ends listening and sends what was told before it', async (t) => {
    const c = await open();
    const before = nb('erase');
    c.tell('erase');
    await c.close();
    t.equal(c.listening, false);
    await poll(async () => nb('erase'), (v) => v === before + 1);
    c.tell('erase');
    t.pass('a tell after close is ignored, without throwing');
  });
}
