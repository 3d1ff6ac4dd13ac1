// Suppression: the identifiers of an erasure with `suppress: true` are refused on every write path
// (/v1 identify, track and batch, the source receiver, /segment/v1, journeys' traits.set and
// events.track) and stored nowhere; lifting one with DELETE /v1/suppressions/{id} lets it in again.
import t from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { call, createAppFixture, createOrg, expectError, identifyCall, poll, trackCall, uid, startServer } from './helpers/server.js';
import { deployJourneys } from './helpers/journeys.js';

const s = await startServer();
t.teardown(() => s.close());
// Direct database access for what has no route (Segment rejections): the server's PostgreSQL, or
// the embedded one through its socket (one pool for the whole file).
const pool = process.env.DATABASE_URL ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 })
  : new pg.Pool({ host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
t.teardown(() => pool.end());

const sha = (v: string) => createHash('sha256').update(v).digest('hex');
const get = (token: string, path: string) => call(s.url, 'GET', path, { token });

t.test('suppressed identifiers are refused on every write path, then lifted', async (t) => {
  const fx = await createAppFixture(s);
  const admin = fx.admin;
  const user = uid('u');
  const address = `${user}@example.com`;
  // The same person in a second app of the org, with a journey that writes after a pause.
  const fx2 = await createAppFixture(s, { org: fx.org });
  await deployJourneys({ url: s.url, operatorToken: s.operatorToken, close: async () => {} }, fx2, [{
    key: 'later',
    body: `await ctx.sleep('2s');
      try { await ctx.traits.set('late', true); } catch (e) {}
      try { await ctx.events.track('late_event', {}); } catch (e) {}`,
  }]);
  const p2 = await identifyCall(s, fx2, { identifiers: { userId: user }, traits: { consent: { onboarding: true } } });
  t.equal(p2.status, 200);
  t.equal((await trackCall(s, fx2, { identifiers: { userId: user }, event: 'later_go' })).status, 201);
  const started = await poll(() => get(admin, `/v1/executions?profileId=${p2.body.data.id}`), (r) => r.body?.data?.length === 1, 20_000);
  const exId = started.body.data[0]?.id;
  t.ok(exId, 'an execution sleeps before writing');

  const p = await identifyCall(s, fx, { identifiers: { userId: user, email: address } });
  t.equal(p.status, 200);
  const er = await call(s.url, 'POST', `/v1/profiles/${p.body.data.id}/erase`, { token: admin, body: { data: { suppress: true } } });
  t.equal(er.status, 202, er.text);
  t.equal(er.body.data.suppress, true);

  const list = await get(admin, '/v1/suppressions');
  t.equal(list.status, 200);
  const byKind = new Map(list.body.data.map((x: any) => [x.kind, x]));
  t.same([...byKind.keys()].sort(), ['email', 'userId'], 'one per identifier');
  t.equal((byKind.get('userId') as any)?.hash, sha(user), 'sha256 of the value');
  t.equal((byKind.get('email') as any)?.hash, sha(address));
  t.equal((byKind.get('userId') as any)?.erasureId, er.body.data.id, 'names its erasure');
  t.notOk(JSON.stringify(list.body).includes(user), 'the value itself is not listed');
  t.equal((await get(fx.org.sessions.member, '/v1/suppressions')).status, 200, 'members may read the list');
  const stranger = await createOrg(s);
  t.equal((await get(stranger.sessions.admin, '/v1/suppressions')).body.data.length, 0, 'another org sees none');

  // /v1 identify, track and batch (each call judged on its own).
  const cases: Array<[string, () => Promise<any>]> = [
    ['identify by userId', () => identifyCall(s, fx, { identifiers: { userId: user }, traits: { x: 1 } })],
    ['identify by email', () => identifyCall(s, fx, { identifiers: { anonymousId: uid('a'), email: address } })],
    ['track', () => trackCall(s, fx, { identifiers: { userId: user }, event: 'Viewed' })],
    ['identify in another app of the org', () => identifyCall(s, fx2, { identifiers: { userId: user } })],
  ];
  for (const [what, fn] of cases) expectError(t, await fn(), 403, 'forbidden', what, 'identifier suppressed');
  const free = uid('free');
  const b = await call(s.url, 'POST', '/v1/batch', { token: fx.key, body: { data: { sourceId: fx.source.id, calls: [
    { type: 'track', identifiers: { userId: user }, event: 'Viewed', messageId: uid('m') },
    { type: 'track', identifiers: { userId: free }, event: 'Viewed', messageId: uid('m') },
  ] } } });
  t.equal(b.status, 200);
  t.match(b.body.data[0], { status: 403, error: { code: 'forbidden', message: 'identifier suppressed' } }, 'batch: the suppressed call refused');
  t.equal(b.body.data[1]?.status, 201, 'batch: the other call accepted');

  // The source receiver.
  const secret = 'whsec_' + randomBytes(24).toString('base64');
  const idp = await call(s.url, 'POST', `/v1/apps/${fx.app.id}/sources`, { token: admin, body: { data: { kind: 'idp', config: { signingSecret: secret } } } });
  t.equal(idp.status, 201);
  const body = JSON.stringify({ type: 'user.created', object: 'event', data: { id: uid('idp'), object: 'user', email_addresses: [{ id: 'e1', email_address: address }], first_name: 'A', last_name: 'B', created_at: Date.now() } });
  const mid = `msg_${randomBytes(6).toString('hex')}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const sig = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`${mid}.${ts}.${body}`).digest('base64');
  const rc = await call(s.url, 'POST', `/v1/sources/${idp.body.data.id}/webhook`, { raw: body, contentType: 'application/json', headers: { 'svix-id': mid, 'svix-timestamp': ts, 'svix-signature': `v1,${sig}` } });
  t.equal(rc.status, 403, 'receiver: refused');
  t.equal(rc.text, 'identifier suppressed');

  // /segment/v1: 200 as Segment does, the refusal kept with the other rejections.
  const wk = await call(s.url, 'POST', `/v1/sources/${fx.source.id}/write-keys`, { token: admin });
  t.equal(wk.status, 201);
  const segMid = uid('seg');
  const sg = await call(s.url, 'POST', '/segment/v1/track', {
    raw: JSON.stringify({ userId: user, event: 'Viewed', messageId: segMid }), contentType: 'application/json',
    headers: { authorization: `Basic ${Buffer.from(`${wk.body.data.writeKey}:`).toString('base64')}` },
  });
  t.equal(sg.status, 200, 'segment: 200');
  const rej = await pool.query('SELECT status, code, message FROM segment_rejections WHERE source_id = $1 AND message_id = $2', [fx.source.id, segMid]);
  t.same(rej.rows, [{ status: 403, code: 'forbidden', message: 'identifier suppressed' }], 'segment: the refusal is recorded');

  // The journey's writes get journal error results.
  const ex = await poll(() => get(admin, `/v1/executions/${exId}`), (r) => r.body?.data?.status === 'completed', 20_000);
  t.equal(ex.body.data.status, 'completed', 'the journey ran to its end');
  const writes = ex.body.data.journal.filter((e: any) => e.call.name === 'traits.set' || e.call.name === 'events.track');
  t.equal(writes.length, 2, 'both writes journaled');
  for (const w of writes) t.match(w.result, { ok: false, error: { code: 'forbidden', message: 'identifier suppressed' } }, `${w.call.name}: a journal error result`);

  // Stored nowhere.
  const holders = (await get(admin, `/v1/profiles?kind=userId&value=${user}`)).body.data;
  t.same(holders.map((x: any) => x.id), [p2.body.data.id], 'only the second app\'s (not erased) profile holds the userId');
  t.notOk('late' in (holders[0]?.traits ?? {}), 'the journey\'s trait was not written');
  t.equal((await get(admin, '/v1/events?event=late_event')).body.data.length, 0, 'no journey event');
  t.equal((await get(admin, `/v1/profiles?kind=email&value=${encodeURIComponent(address)}`)).body.data.length, 0, 'no profile by email');

  // Lifting: member 403, another org 404, admin 200; the identifier is accepted again.
  const supId = (byKind.get('userId') as any).id;
  expectError(t, await call(s.url, 'DELETE', `/v1/suppressions/${supId}`, { token: fx.org.sessions.member }), 403, 'forbidden', 'member lifts');
  expectError(t, await call(s.url, 'DELETE', `/v1/suppressions/${supId}`, { token: stranger.sessions.admin }), 404, 'not_found', 'another org lifts');
  t.equal((await call(s.url, 'DELETE', `/v1/suppressions/${supId}`, { token: admin })).status, 200, 'lifted');
  expectError(t, await call(s.url, 'DELETE', `/v1/suppressions/${supId}`, { token: admin }), 404, 'not_found', 'lifted twice');
  const again = await identifyCall(s, fx, { identifiers: { userId: user } });
  t.equal(again.status, 200, 'the identifier is accepted again');
  expectError(t, await identifyCall(s, fx, { identifiers: { email: address } }), 403, 'forbidden', 'the other one is still suppressed', 'identifier suppressed');
  t.equal((await get(admin, '/v1/suppressions')).body.data.length, 1, 'one left');
});
