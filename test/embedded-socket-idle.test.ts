// A client of the embedded store's socket (an operator's psql) that leaves a transaction idle holds
// the one session the service's statements need (docs/operations.md): after HEADWATER_EMBEDDED_IDLE_TX_MS
// with the service waiting, its transaction is rolled back and its connection closed with 25P03, and
// the service goes on; a transaction that keeps running statements is not ended. Always embedded.
import t, { type Test as Tap } from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { createAppFixture, startServer, trackCall, uid } from './helpers/server.js';
import { EMBEDDED_ENV, embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'the embedded store\'s socket');

const LIMIT_MS = 400;

/** A server with the limit `idleTxMs`, an app to track into, and a client of the store's socket in BEGIN. */
async function heldStore(t: Tap, idleTxMs: string) {
  const s = await startServer([], { ...EMBEDDED_ENV, HEADWATER_EMBEDDED_IDLE_TX_MS: idleTxMs });
  t.teardown(() => s.close());
  const f = await createAppFixture(s);
  const psql = new pg.Client({ host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres' });
  await psql.connect();
  t.teardown(() => psql.end());
  await psql.query('BEGIN');
  return { s, f, psql };
}

t.test('an idle transaction on the socket is ended while the service waits', async (t) => {
  const s = await startServer([], { ...EMBEDDED_ENV, HEADWATER_EMBEDDED_IDLE_TX_MS: String(LIMIT_MS) });
  t.teardown(() => s.close());
  const f = await createAppFixture(s);
  const socket = { host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres' };
  const table = `idle_${uid('t').replace(/-/g, '_')}`;

  const psql = new pg.Client(socket);
  const errors: Error[] = [];
  psql.on('error', (e) => errors.push(e));
  await psql.connect();
  await psql.query('BEGIN');
  await psql.query(`CREATE TABLE ${table} (x int)`);
  // The session is held: a track call waits for the store until the transaction is ended.
  const t0 = Date.now();
  const r = await trackCall(s, f, { identifiers: { userId: uid('u') }, event: 'Waited' });
  const waited = Date.now() - t0;
  t.equal(r.status, 201, 'the call is answered once the idle transaction is ended');
  t.ok(waited >= LIMIT_MS * 0.8, `it waited for the limit (${waited} ms)`);
  t.ok(waited < 10_000, `and not much longer (${waited} ms)`);

  const next = await psql.query('SELECT 1').then(() => 'answered', (e: Error & { code?: string }) => e.code ?? e.message);
  t.not(next, 'answered', 'the idle client\'s connection is closed');
  const seen = [...errors.map((e) => (e as Error & { code?: string }).code ?? e.message), next];
  t.ok(seen.includes('25P03'), `it is told why: idle_in_transaction_session_timeout, 25P03 (${seen.join(', ')})`);
  await psql.end().catch(() => {});

  const check = new pg.Client(socket);
  await check.connect();
  t.teardown(() => check.end());
  const exists = await check.query('SELECT to_regclass($1) AS t', [table]);
  t.equal(exists.rows[0].t, null, 'its work was rolled back');
  t.equal((await trackCall(s, f, { identifiers: { userId: uid('u') }, event: 'After' })).status, 201, 'the service goes on');
});

t.test('a transaction that keeps running statements is not ended', async (t) => {
  const { s, f, psql } = await heldStore(t, String(LIMIT_MS));
  const call = trackCall(s, f, { identifiers: { userId: uid('u') }, event: 'Behind' });
  // Statements every LIMIT/4 for three limits: never idle for the limit, so never ended.
  const until = Date.now() + 3 * LIMIT_MS;
  let n = 0;
  while (Date.now() < until) {
    await psql.query('SELECT 1');
    n++;
    await new Promise((r) => setTimeout(r, LIMIT_MS / 4));
  }
  await psql.query('COMMIT');
  t.ok(n >= 4, `${n} statements in the transaction`);
  t.equal((await call).status, 201, 'the call waited behind the transaction and was answered');
  t.equal((await psql.query('SELECT 2 AS x')).rows[0].x, 2, 'the client\'s connection is still open');
});

t.test('0 turns the limit off; a negative value is refused', async (t) => {
  const { s, f, psql } = await heldStore(t, '0');
  let answered = false;
  const call = trackCall(s, f, { identifiers: { userId: uid('u') }, event: 'Held' }).then((r) => { answered = true; return r; });
  await new Promise((r) => setTimeout(r, 4 * LIMIT_MS));
  t.notOk(answered, 'the call still waits behind the idle transaction');
  await psql.query('COMMIT');
  t.equal((await call).status, 201, 'and is answered once it ends');

  const bad = await startServer([], { ...EMBEDDED_ENV, HEADWATER_EMBEDDED_IDLE_TX_MS: '-1' }).then(() => 'started', (e: Error) => e.message);
  t.match(bad, /HEADWATER_EMBEDDED_IDLE_TX_MS must be a non-negative integer/, 'a negative limit is a configuration error');
});
