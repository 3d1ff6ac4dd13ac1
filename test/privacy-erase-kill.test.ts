// A `headwater serve` SIGKILLed in the middle of an erasure (some steps done, the rest not): the
// erasure is still `pending` and the profile still there, and after a restart the job is taken
// again, runs to its end and is `completed` with nothing of the profile left.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, createAppFixture, identifyCall, poll, uid, type TestServer } from './helpers/server.js';
import { ownDatabase } from './helpers/db.js';
import { serveBin, type Proc } from './helpers/serve.js';
import { ownStreamPrefix } from './helpers/streams.js';

t.test('an erasure interrupted by SIGKILL completes after the restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-erase-kill-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const token = `hwo_${randomBytes(24).toString('base64url')}`;
  const db = await ownDatabase(t);
  const env: Record<string, string> = {
    ...(db ? { DATABASE_URL: db } : {}), HEADWATER_OPERATOR_TOKEN: token, HEADWATER_SECRET_KEY: randomBytes(32).toString('base64url'),
    HEADWATER_STREAM_PREFIX: ownStreamPrefix(t, 'e'), HEADWATER_LOG_LEVEL: 'info',
    // Steps spaced out so that the kill lands between them; a short lease so that, on a shared
    // database, the restarted process takes the dead one's job soon.
    HEADWATER_ERASURE_PAUSE_MS: '700', HEADWATER_ERASURE_LEASE_MS: '3000',
  };
  const start = async () => {
    const p = await serveBin(dir, env);
    let log = '';
    p.child.stderr!.on('data', (b) => { log += b; });
    return { p, log: () => log };
  };
  let run = await start();
  let p: Proc = run.p;
  t.teardown(() => { p.child.kill('SIGKILL'); });
  const s: TestServer = { url: p.url, operatorToken: token, close: async () => {} };
  const fx = await createAppFixture(s);
  const admin = fx.admin;
  const user = uid('u');
  const prof = await identifyCall(s, fx, { identifiers: { userId: user }, traits: { plan: 'pro' } });
  t.equal(prof.status, 200);
  const calls = Array.from({ length: 50 }, (_, i) => ({ type: 'track', identifiers: { userId: user }, event: 'Viewed', properties: { i }, messageId: uid('m') }));
  const b = await call(s.url, 'POST', '/v1/batch', { token: fx.key, body: { data: { sourceId: fx.source.id, calls } } });
  t.equal(b.status, 200);
  const evs = await poll(() => call(s.url, 'GET', `/v1/events?profileId=${prof.body.data.id}&limit=100`, { token: admin }), (r) => r.body?.data?.length === 50, 20_000);
  t.equal(evs.body.data.length, 50, 'the events are stored');

  const er = await call(s.url, 'POST', `/v1/profiles/${prof.body.data.id}/erase`, { token: admin, body: { data: { suppress: false } } });
  t.equal(er.status, 202, er.text);
  // Killed once a few steps are done (the kill falls in the pause after one).
  const mid = await poll(async () => run.log(), (l) => l.includes('"step":"delete memberships"'), 30_000, 20);
  t.ok(mid.includes('"step":"delete memberships"'), 'some steps ran');
  t.notOk(mid.includes('erasure completed'), 'not all of them');
  p.child.kill('SIGKILL');
  await new Promise((r) => p.child.once('exit', r));

  run = await start();
  p = run.p;
  const s2: TestServer = { url: p.url, operatorToken: token, close: async () => {} };
  const pending = await call(s2.url, 'GET', `/v1/erasures/${er.body.data.id}`, { token: admin });
  t.equal(pending.body.data?.status, 'pending', 'still pending after the kill, never half-done and completed');
  const done = await poll(() => call(s2.url, 'GET', `/v1/erasures/${er.body.data.id}`, { token: admin }), (r) => r.body?.data?.status === 'completed', 90_000, 200);
  t.equal(done.body.data.status, 'completed', 'completed after the restart');
  t.equal((await call(s2.url, 'GET', `/v1/profiles/${prof.body.data.id}`, { token: admin })).status, 404, 'the profile is gone');
  t.equal((await call(s2.url, 'GET', `/v1/events?profileId=${prof.body.data.id}`, { token: admin })).body.data.length, 0, 'its events are gone');
  t.equal((await call(s2.url, 'GET', '/v1/events?event=Viewed', { token: admin })).body.data.length, 0, 'from every read');
  t.equal((await call(s2.url, 'GET', `/v1/profiles?kind=userId&value=${user}`, { token: admin })).body.data.length, 0, 'no profile holds its identifier');
  // Erasing it again: already erased.
  t.equal((await call(s2.url, 'POST', `/v1/profiles/${prof.body.data.id}/erase`, { token: admin })).status, 404, 'already erased: 404');
});
