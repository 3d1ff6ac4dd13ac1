// enrollment.throttle and enrollment.debounce across a restart of the service: the throttle's count
// and a pending debounced start live in the store, not in the process.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, createAppFixture, poll, startServer, uid } from './helpers/server.js';
import { consenting, deployJourneys, ended, executions, fire, untilExecutions } from './helpers/journeys.js';
import { ownStreamPrefix } from './helpers/streams.js';

t.test('throttle and debounce hold across a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-controls-flow-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = randomBytes(32).toString('base64url');
  const env = { HEADWATER_STREAM_PREFIX: ownStreamPrefix(t, 'c') };
  const s1 = await startServer(['--data-dir', dir, '--secret-key', key], env);
  const fx = await createAppFixture(s1);
  const admin = fx.org.sessions.admin;
  // A ten-year window: the test never straddles two windows.
  await deployJourneys(s1, fx, [
    { key: 'thr', body: '', enrollment: { throttle: { limit: 3, per: '3650d' } } },
    { key: 'deb', body: `await ctx.traits.set('n', ctx.event.properties.n);`, enrollment: { debounce: '8s' } },
  ]);
  const users = Array.from({ length: 6 }, () => uid('u'));
  for (const u of users) await consenting(s1, fx, { userId: u });
  const debUser = uid('d');
  const dp = await consenting(s1, fx, { userId: debUser });

  for (const u of users.slice(0, 4)) await fire(s1, fx, u, 'thr_go');
  const first = await untilExecutions(s1, admin, { journey: 'thr' }, (l) => l.length >= 3 && l.every(ended), 15_000);
  await fire(s1, fx, debUser, 'deb_go', { n: 1 });
  const last = await fire(s1, fx, debUser, 'deb_go', { n: 2 });
  t.equal(last.status, 201);
  // The fourth trigger landed (its event is listed) and started nothing.
  await poll(() => call(s1.url, 'GET', `/v1/events?event=thr_go`, { token: admin }), (r) => r.body?.data?.length === 4, 10_000);
  await poll(() => call(s1.url, 'GET', `/v1/events?event=deb_go`, { token: admin }), (r) => r.body?.data?.length === 2, 10_000);
  t.equal((await executions(s1, admin, { journey: 'thr' })).body.data.length, 3, 'three starts, the fourth throttled');
  t.equal(first.length, 3);
  t.equal((await executions(s1, admin, { journey: 'deb' })).body.data.length, 0, 'the debounced start is pending');
  await s1.close();

  const s2 = await startServer(['--data-dir', dir, '--secret-key', key], env);
  t.teardown(() => s2.close());
  for (const u of users.slice(4)) await fire(s2, fx, u, 'thr_go');
  const [x] = await untilExecutions(s2, admin, { journey: 'deb' }, (l) => l.length === 1 && ended(l[0]), 30_000);
  t.equal(x.status, 'completed', x.error);
  t.equal(x.profileId, dp.id);
  t.ok(Date.parse(x.startedAt) - Date.parse(last.body.data.receivedAt) >= 8000 - 50, 'started once the trigger was quiet for 8 s');
  const prof = await call(s2.url, 'GET', `/v1/profiles/${dp.id}`, { token: admin });
  t.equal(prof.body.data.traits.n, 2, 'the latest trigger became ctx.event');
  await poll(() => call(s2.url, 'GET', `/v1/events?event=thr_go`, { token: admin }), (r) => r.body?.data?.length === 6, 10_000);
  t.equal((await executions(s2, admin, { journey: 'thr' })).body.data.length, 3, 'the window\'s count survived the restart: nothing more started');
  t.equal((await executions(s2, admin, { journey: 'deb' })).body.data.length, 1, 'one debounced start');
});
