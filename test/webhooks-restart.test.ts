// The delivery outbox is durable and shared: deliveries pending when a server stops are sent by the
// next one on the same data (each webhook-id received exactly once), and two servers draining one
// database never send the same delivery twice.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startServer, call, createOrg, poll, startWorker } from './helpers/server.js';
import { deadPort, startReceiver } from './helpers/receiver.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { webhookMarkers } from './helpers/outbox.js';

const FLAGS = ['--webhook-allow-private', '--webhook-attempts', '20', '--webhook-backoff-ms', '200', '--webhook-poll-ms', '50', '--webhook-timeout-ms', '1000'];

t.test('deliveries pending at a stop are delivered once by the next server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-wh-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await deadPort();
  const env = dbEnv(await ownDatabase(t));
  const s1 = await startServer(['--data-dir', dir, ...FLAGS], env);
  const org = await createOrg(s1);
  const admin = org.sessions.admin;
  const c = await call(s1.url, 'POST', '/v1/webhooks', { token: admin, body: { data: { name: 'down', config: { url: `http://127.0.0.1:${port}/in` } } } });
  t.equal(c.status, 201);
  const w = c.body.data;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await call(s1.url, 'POST', `/v1/webhooks/${w.id}/test`, { token: admin, body: { data: { payload: { i } } } })).body.data.id);
  const tried = await poll(async () => (await call(s1.url, 'GET', `/v1/webhooks/${w.id}/deliveries`, { token: admin })).body.data as any[],
    (l) => l.length === 5 && l.every((d) => d.attempts >= 1), 10_000, 50);
  t.ok(tried.every((d) => d.status === 'pending' && d.attempts >= 1 && d.lastStatusCode === null), 'tried against a dead port, still pending');
  await s1.close();

  const rcv = await startReceiver(() => ({ status: 200 }), port);
  t.teardown(() => rcv.close());
  rcv.secret = w.signingSecret;
  const s2 = await startServer(['--data-dir', dir, ...FLAGS], env);
  t.teardown(() => s2.close());
  const done = await poll(async () => (await call(s2.url, 'GET', `/v1/webhooks/${w.id}/deliveries`, { token: admin })).body.data as any[],
    (l) => l.length === 5 && l.every((d) => d.status === 'succeeded'), 30_000, 100);
  t.ok(done.every((d) => d.status === 'succeeded'), 'all delivered after the restart');
  const marker = await webhookMarkers(s2, admin, w.id, rcv);
  t.ok(marker.arrived, 'a later delivery arrived');
  const counts = rcv.counts();
  for (const id of marker.ids) counts.delete(id);
  t.same([...counts.keys()].sort(), [...ids].sort(), 'every pending delivery arrived');
  t.ok([...counts.values()].every((n) => n === 1), `each webhook-id exactly once: ${JSON.stringify([...counts.values()])}`);
  t.ok(rcv.hits.every((h) => h.verified), 'signed with the stored secret');
});

t.test('a server and a worker draining one database never send a delivery twice', { skip: !(process.env.DATABASE_URL && process.env.NATS_URL) && 'needs DATABASE_URL and NATS_URL (embedded data belongs to one process)' }, async (t) => {
  const key = randomBytes(32).toString('base64url');
  const flags = ['--secret-key', key, ...FLAGS];
  const env = dbEnv(await ownDatabase(t));
  const a = await startServer(flags, env);
  t.teardown(() => a.close());
  // `headwater worker` in this process: its own pool and sender against the same database.
  await startWorker(t, flags, env);
  // Slow answers keep the claims of both senders overlapping.
  const rcv = await startReceiver(() => ({ status: 200, delayMs: 30 }));
  t.teardown(() => rcv.close());
  const org = await createOrg(a);
  const admin = org.sessions.admin;
  const c = await call(a.url, 'POST', '/v1/webhooks', { token: admin, body: { data: { name: 'shared', config: { url: rcv.url } } } });
  rcv.secret = c.body.data.signingSecret;
  for (let i = 0; i < 60; i++) await call(a.url, 'POST', `/v1/webhooks/${c.body.data.id}/test`, { token: admin, body: { data: { payload: { i } } } });
  const done = await poll(async () => (await call(a.url, 'GET', `/v1/webhooks/${c.body.data.id}/deliveries?limit=100`, { token: admin })).body.data as any[],
    (l) => l.length === 60 && l.every((d) => d.status === 'succeeded'), 30_000, 100);
  t.equal(done.filter((d) => d.status === 'succeeded').length, 60, 'all delivered');
  t.ok(done.every((d) => d.attempts === 1), 'one attempt each');
  // Several, so that both senders are likely to claim one of them.
  const marker = await webhookMarkers(a, admin, c.body.data.id, rcv, 6);
  t.ok(marker.arrived, 'later deliveries arrived');
  const counts = rcv.counts();
  for (const id of marker.ids) counts.delete(id);
  t.equal(counts.size, 60);
  t.ok([...counts.values()].every((n) => n === 1), 'each webhook-id exactly once');
  t.ok(rcv.hits.every((h) => h.verified), 'the worker signs with the shared key too');
});
