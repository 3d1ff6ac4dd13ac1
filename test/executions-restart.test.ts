// A restart of the service while 100 journey executions sleep: each completes once afterwards.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, createAppFixture, createOrg, poll, sleep, startServer, uid, type TestServer } from './helpers/server.js';
import { consenting, deployJourneys, eventsByProfile, fire, untilExecutions } from './helpers/journeys.js';
import { startReceiver } from './helpers/receiver.js';
import { serveBin, type Proc } from './helpers/serve.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { ownStreamPrefix } from './helpers/streams.js';

const scaled = !!(process.env.DATABASE_URL && process.env.NATS_URL);


t.test('a restart while 100 executions sleep: every one completes once afterwards', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-exe-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = randomBytes(32).toString('base64url');
  // A restart keeps its configuration: the same stream names, so the events the first process
  // published and did not land yet are landed by the second. A database of its own: another test
  // file's server on a shared one would claim these executions when they fall due.
  const env = { HEADWATER_STREAM_PREFIX: ownStreamPrefix(t, 'r'), ...dbEnv(await ownDatabase(t)) };
  const s1 = await startServer(['--data-dir', dir, '--secret-key', key], env);
  const fx = await createAppFixture(s1);
  const admin = fx.org.sessions.admin;
  await deployJourneys(s1, fx, [{ key: 'nap', body: `await ctx.sleep('15s'); await ctx.events.track('napped', { n: 1 }); await ctx.traits.set('napped', true);` }]);
  const users = Array.from({ length: 100 }, () => uid('u'));
  await Promise.all(users.map((u) => consenting(s1, fx, { userId: u })));
  await Promise.all(users.map((u) => fire(s1, fx, u, 'nap_go')));
  const waiting = await untilExecutions(s1, admin, { journey: 'nap', status: 'waiting', limit: '100' }, (l) => l.length === 100, 60_000);
  const all = (await call(s1.url, 'GET', '/v1/executions?journey=nap&limit=100', { token: admin })).body.data as any[];
  t.equal(waiting.length, 100, `100 executions sleep (of ${all.length}: ${all.filter((x) => x.status !== 'waiting').map((x) => x.status).join(',')})`);
  await s1.close();

  const s2 = await startServer(['--data-dir', dir, '--secret-key', key], env);
  t.teardown(() => s2.close());
  const done = await untilExecutions(s2, admin, { journey: 'nap', status: 'completed', limit: '100' }, (l) => l.length === 100, 60_000);
  t.equal(done.length, 100, 'all 100 completed after the restart');
  t.ok(done.every((x) => x.journalEntries === 3), 'each with its three entries');
  t.equal((await call(s2.url, 'GET', '/v1/executions?journey=nap&limit=100', { token: admin })).body.data.length, 100, 'no execution started twice');
  const counts = await poll(() => eventsByProfile(s2, admin, 'napped'), (m) => m.size === 100, 60_000);
  t.equal(counts.size, 100, 'every profile tracked its event');
  t.ok([...counts.values()].every((n) => n === 1), 'each exactly once');
});

