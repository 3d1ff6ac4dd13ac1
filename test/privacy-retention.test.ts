// Retention settings (partial PATCH, bounds, defaults, role matrix) and the sweep: it deletes
// exactly what is older than each window (rows are aged through the database, the only way to make
// them old) and never a waiting execution.
import t from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { call, createAppFixture, createOrg, expectError, identifyCall, poll, trackCall, uid, startServer } from './helpers/server.js';
import { deployJourneys } from './helpers/journeys.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { startReceiver } from './helpers/receiver.js';

// A database of its own: this server sweeps every 300 ms, and on the shared DATABASE_URL it would
// sweep (and wait on) every other test file's orgs too.
const db = await ownDatabase(t);
const s = await startServer([], { HEADWATER_RETENTION_SWEEP_MS: '300', HEADWATER_WEBHOOK_ALLOW_PRIVATE: 'true', ...dbEnv(db) });
t.teardown(() => s.close());
const pool = db ? new pg.Pool({ connectionString: db, max: 1 })
  : new pg.Pool({ host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
t.teardown(() => pool.end());
const get = (token: string, path: string) => call(s.url, 'GET', path, { token });
const patch = (token: string, data: unknown) => call(s.url, 'PATCH', '/v1/settings', { token, body: { data } });

t.test('retention settings', async (t) => {
  const o = await createOrg(s);
  // Out of the way of the sweep tests: nothing to delete here, but keep it from being swept at all.
  const g = await get(o.sessions.member, '/v1/settings');
  t.same(g.body.data, { ingestionPolicy: 'permissive', retention: { events: null, executions: 90, emails: 30, webhookDeliveries: 30, rejections: 30 }, messaging: { frequencyCap: null, quietHours: null } }, 'defaults');
  const p = await patch(o.sessions.admin, { retention: { emails: 7, events: 365 } });
  t.same(p.body.data.retention, { events: 365, executions: 90, emails: 7, webhookDeliveries: 30, rejections: 30 }, 'only the kinds given change');
  const q = await patch(o.sessions.admin, { ingestionPolicy: 'strict' });
  t.same(q.body.data, { ingestionPolicy: 'strict', retention: { events: 365, executions: 90, emails: 7, webhookDeliveries: 30, rejections: 30 }, messaging: { frequencyCap: null, quietHours: null } }, 'policy alone keeps retention');
  const n = await patch(o.sessions.admin, { retention: { executions: null } });
  t.equal(n.body.data.retention.executions, null, 'null keeps forever');
  t.equal(n.body.data.ingestionPolicy, 'strict', 'retention alone keeps the policy');
  t.equal((await patch(o.sessions.admin, {})).status, 200, 'an empty patch changes nothing');
  for (const [label, data, field] of [
    ['zero days', { retention: { events: 0 } }, '/data/retention/events'],
    ['too many days', { retention: { emails: 3651 } }, '/data/retention/emails'],
    ['fraction', { retention: { rejections: 1.5 } }, '/data/retention/rejections'],
    ['unknown kind', { retention: { logs: 3 } }, '/data/retention'],
  ] as const) expectError(t, await patch(o.sessions.admin, data), 422, 'validation_failed', label, field);
  expectError(t, await patch(o.sessions.member, { retention: { emails: 3 } }), 403, 'forbidden', 'member');
  t.equal((await get(o.sessions.admin, '/v1/settings')).body.data.retention.emails, 7, 'refused changes changed nothing');
});

t.test('the sweep deletes what is older than each window, never a waiting execution', async (t) => {
  const fx = await createAppFixture(s);
  const admin = fx.admin;
  const orgId = fx.org.org.id;
  const rcv = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => rcv.close());
  const hook = await call(s.url, 'POST', '/v1/webhooks', { token: admin, body: { data: { name: 'sink', config: { url: rcv.url } } } });
  t.equal(hook.status, 201);
  rcv.secret = hook.body.data.signingSecret;
  await deployJourneys({ url: s.url, operatorToken: s.operatorToken, close: async () => {} }, fx, [
    { key: 'done', body: `await ctx.email.send('note', { n: 1 }); await ctx.webhook.send('sink', { n: 1 }); await ctx.webhook.send('sink', { n: 2 });` },
    { key: 'waits', body: `await ctx.waitForEvent(['never'], { timeout: '30d' });` },
  ], [{ key: 'note', render: `(props) => ({ subject: 'N', html: '<p>n</p>', text: 'n' })` }]);
  // Keep the sweep away from this org until everything is aged.
  await pool.query(`UPDATE orgs SET retention_swept_at = now() + interval '1 hour' WHERE id = $1`, [orgId]);
  const user = uid('u');
  const address = `${user}@example.com`;
  const prof = await identifyCall(s, fx, { identifiers: { userId: user }, traits: { email: address, consent: { onboarding: true } } });
  t.equal(prof.status, 200);
  const day = 86_400_000;
  const ts = (daysAgo: number) => new Date(Date.now() - daysAgo * day).toISOString();
  for (const [event, daysAgo] of [['Old', 12], ['Old', 11], ['Recent', 8], ['Recent', 0]] as const) {
    t.equal((await trackCall(s, fx, { identifiers: { userId: user }, event, timestamp: ts(daysAgo) })).status, 201);
  }
  t.equal((await trackCall(s, fx, { identifiers: { userId: user }, event: 'done_go' })).status, 201);
  const other = uid('w');
  t.equal((await identifyCall(s, fx, { identifiers: { userId: other }, traits: { consent: { onboarding: true } } })).status, 200);
  t.equal((await trackCall(s, fx, { identifiers: { userId: other }, event: 'waits_go' })).status, 201);
  const ex = await poll(() => get(admin, '/v1/executions'), (r) => r.body?.data?.length === 2 && r.body.data.some((x: any) => x.status === 'completed') && r.body.data.some((x: any) => x.status === 'waiting'), 30_000);
  const finished = ex.body.data.find((x: any) => x.status === 'completed');
  const waiting = ex.body.data.find((x: any) => x.status === 'waiting');
  t.ok(finished && waiting, 'one completed, one waiting');
  await poll(() => get(admin, '/v1/events?event=Old'), (r) => r.body?.data?.length === 2, 15_000);
  await poll(() => get(admin, '/v1/emails'), (r) => r.body?.data?.length === 1, 15_000);
  const deliveries = `/v1/webhooks/${hook.body.data.id}/deliveries`;
  const sent = await poll(() => get(admin, deliveries), (r) => r.body?.data?.length === 2 && r.body.data.every((d: any) => d.status === 'succeeded'), 15_000);
  const [newer, older] = sent.body.data.map((d: any) => d.id) as [string, string];
  const fresh = await call(s.url, 'POST', '/v1/emails/test', { token: admin, body: { data: { to: 'ops@example.com' } } });
  t.equal(fresh.status, 202);
  // A Segment call refused (no identity) becomes a rejection.
  const wk = await call(s.url, 'POST', `/v1/sources/${fx.source.id}/write-keys`, { token: admin });
  for (let i = 0; i < 2; i++) {
    const r = await call(s.url, 'POST', '/segment/v1/batch', {
      raw: JSON.stringify({ batch: [{ type: 'track', event: 'NoOne', messageId: uid('r') }] }), contentType: 'application/json',
      headers: { authorization: `Basic ${Buffer.from(`${wk.body.data.writeKey}:`).toString('base64')}` },
    });
    t.equal(r.status, 200);
  }
  const rejections = (await pool.query('SELECT id FROM segment_rejections WHERE org_id = $1 ORDER BY id', [orgId])).rows.map((r) => r.id);
  t.equal(rejections.length, 2, 'two rejections');

  // Age the rows: past every window but the newer ones.
  await pool.query(`UPDATE executions SET started_at = now() - interval '100 days', ended_at = CASE WHEN ended_at IS NULL THEN NULL ELSE now() - interval '95 days' END WHERE org_id = $1`, [orgId]);
  await pool.query(`UPDATE emails SET created_at = now() - interval '31 days' WHERE org_id = $1 AND id <> $2`, [orgId, fresh.body.data.id]);
  await pool.query(`UPDATE segment_rejections SET created_at = now() - interval '31 days' WHERE id = $1`, [rejections[0]]);
  await pool.query(`UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE id = $1`, [older]);
  t.equal((await patch(admin, { retention: { events: 10 } })).status, 200);
  await pool.query(`UPDATE orgs SET retention_swept_at = NULL WHERE id = $1`, [orgId]);

  const swept = await poll(() => get(admin, '/v1/events?event=Old'), (r) => r.body?.data?.length === 0, 20_000);
  t.equal(swept.body.data.length, 0, 'events older than 10 days deleted');
  t.equal((await get(admin, '/v1/events?event=Recent')).body.data.length, 2, 'newer events kept (8 days is inside the window)');
  await poll(() => get(admin, `/v1/executions/${finished.id}`), (r) => r.status === 404, 10_000);
  t.equal((await get(admin, `/v1/executions/${finished.id}`)).status, 404, 'the execution that ended 95 days ago is deleted');
  t.equal((await get(admin, `/v1/executions/${waiting.id}`)).body.data?.status, 'waiting', 'the waiting one (started 100 days ago) is kept');
  t.equal((await pool.query('SELECT count(*)::int AS n FROM execution_logs WHERE execution_id = $1', [finished.id])).rows[0].n, 0, 'with its logs');
  t.same((await get(admin, '/v1/emails')).body.data.map((e: any) => e.id), [fresh.body.data.id], 'only the recent e-mail is kept');
  t.same((await pool.query('SELECT id FROM segment_rejections WHERE org_id = $1', [orgId])).rows.map((r) => r.id), [rejections[1]], 'only the recent rejection is kept');
  t.same((await get(admin, deliveries)).body.data.map((d: any) => d.id), [newer], 'only the recent webhook delivery is kept');
  const other2 = await createOrg(s);
  t.equal((await get(other2.sessions.admin, '/v1/settings')).body.data.retention.events, null, 'other orgs keep their own windows');
});
