// Two processes (serve and `headwater worker`) against one Postgres run each execution exactly once.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { call, createAppFixture, poll, startServer, startWorker, uid } from './helpers/server.js';
import { consenting, deployJourneys, eventsByProfile, fire, untilExecutions } from './helpers/journeys.js';
import { startReceiver } from './helpers/receiver.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { settledDeliveries } from './helpers/outbox.js';
import { ownStreamPrefix } from './helpers/streams.js';

const scaled = !!(process.env.DATABASE_URL && process.env.NATS_URL);


t.test('two processes against one Postgres run each execution exactly once', { skip: !scaled && 'needs DATABASE_URL and NATS_URL (embedded data belongs to one process)' }, async (t) => {
  const key = randomBytes(32).toString('base64url');
  const flags = ['--secret-key', key, '--webhook-allow-private', '--webhook-poll-ms', '50'];
  // One stream prefix for both: the worker's tracked events must reach the events stream the
  // serve process lands (it owns the embedded ClickHouse).
  const prefix = ownStreamPrefix(t, 'w');
  const env = dbEnv(await ownDatabase(t));
  const a = await startServer(flags, { ...env, HEADWATER_STREAM_PREFIX: prefix });
  t.teardown(() => a.close());
  await startWorker(t, flags, { ...env, HEADWATER_STREAM_PREFIX: prefix });
  const rcv = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => rcv.close());
  const fx = await createAppFixture(a);
  const admin = fx.org.sessions.admin;
  const hook = await call(a.url, 'POST', '/v1/webhooks', { token: admin, body: { data: { name: 'sink', config: { url: rcv.url } } } });
  rcv.secret = hook.body.data.signingSecret;
  await deployJourneys(a, fx, [{ key: 'pair', body: `await ctx.sleep('300ms'); await ctx.webhook.send('sink', { p: ctx.event.profileId }); await ctx.events.track('pair_done', {});` }]);
  const users = Array.from({ length: 60 }, () => uid('u'));
  await Promise.all(users.map((u) => consenting(a, fx, { userId: u })));
  await Promise.all(users.map((u) => fire(a, fx, u, 'pair_go')));
  const done = await untilExecutions(a, admin, { journey: 'pair', status: 'completed', limit: '100' }, (l) => l.length === 60, 60_000);
  t.equal(done.length, 60);
  t.equal((await call(a.url, 'GET', '/v1/executions?journey=pair&limit=100', { token: admin })).body.data.length, 60, 'one execution per trigger');
  await poll(async () => rcv.hits.length, (n) => n >= 60, 20_000);
  const deliveries = await settledDeliveries(a, admin, hook.body.data.id);
  t.ok(deliveries.length === 60 && deliveries.every((d) => d.status === 'succeeded'), 'every delivery sent, none pending');
  const bodies = rcv.hits.map((h) => h.json.data.p);
  t.equal(new Set(bodies).size, 60, 'every profile\'s webhook arrived');
  t.equal(rcv.hits.length, 60, 'and none twice');
  const counts = await poll(() => eventsByProfile(a, admin, 'pair_done'), (m) => m.size === 60, 100_000);
  t.ok(counts.size === 60 && [...counts.values()].every((n) => n === 1), `each tracked event once (${counts.size} profiles, counts ${[...new Set(counts.values())].join(',')})`);
});
