// Tenant safety of the webhook sender (issue 23, item 5): one org's slow receivers hold at most the
// org's share of the sending slots, so another org's delivery to a fast receiver arrives within the
// bound the README states while they hang.
import t from 'tap';
import { call, createOrg, poll, startServer } from './helpers/server.js';
import { startReceiver } from './helpers/receiver.js';
import { dbEnv, ownDatabase } from './helpers/db.js';

/** Enqueue to arrival of another org's delivery while one org's receivers hold their share (README). */
const BOUND_MS = 3000;

t.test('slow receivers of one org leave slots to another org', async (t) => {
  // 8 slots, 2 per webhook, 4 per org: without the per-org share org A's 4 slow webhooks took all 8.
  const flags = ['--webhook-allow-private', '--webhook-poll-ms', '100', '--webhook-timeout-ms', '30000',
    '--webhook-concurrency', '8', '--webhook-concurrency-per-webhook', '2', '--webhook-concurrency-per-org', '4'];
  const s = await startServer(flags, dbEnv(await ownDatabase(t)));
  t.teardown(() => s.close());
  const slow = await startReceiver(() => 'hang');
  t.teardown(() => slow.close());
  const fast = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => fast.close());

  const a = await createOrg(s);
  const b = await createOrg(s);
  for (let w = 0; w < 4; w++) {
    const c = await call(s.url, 'POST', '/v1/webhooks', { token: a.sessions.admin, body: { data: { name: `slow-${w}`, config: { url: `${slow.url}/w${w}` } } } });
    t.equal(c.status, 201);
    for (let i = 0; i < 6; i++) {
      const d = await call(s.url, 'POST', `/v1/webhooks/${c.body.data.id}/test`, { token: a.sessions.admin, body: { data: { payload: { w, i } } } });
      t.equal(d.status, 202, 'org A delivery enqueued');
    }
  }
  // Org A's receivers hold every slot org A may have.
  await poll(async () => slow.hits.length, (n) => n >= 4, 10_000, 50);

  const hook = await call(s.url, 'POST', '/v1/webhooks', { token: b.sessions.admin, body: { data: { name: 'fast', config: { url: fast.url } } } });
  fast.secret = hook.body.data.signingSecret;
  const began = Date.now();
  const d = await call(s.url, 'POST', `/v1/webhooks/${hook.body.data.id}/test`, { token: b.sessions.admin, body: { data: { payload: { org: 'b' } } } });
  t.equal(d.status, 202);
  await poll(async () => fast.hits.length, (n) => n >= 1, 10_000, 20);
  const took = Date.now() - began;
  t.ok(took < BOUND_MS, `org B's delivery arrived within ${BOUND_MS} ms (took ${took} ms)`);
  t.equal(fast.hits[0]?.id, d.body.data.id, 'the delivery org B enqueued');
  t.ok(fast.hits[0]?.verified, 'signed');
  t.equal(slow.hits.length, 4, 'org A still holds only its share (4 of 8 slots): its receivers never answered');
});
