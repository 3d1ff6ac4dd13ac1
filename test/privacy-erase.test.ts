// Erasure through the public routes: a profile with a merged record, events, a segment membership,
// a waiting execution, an e-mail and a webhook delivery is erased; afterwards no route shows its
// data, e-mails and deliveries keep their statuses without bodies or recipients, and other
// profiles are untouched. Role matrix: members 403, another org 404.
import t from 'tap';
import { call, createAppFixture, createOrg, expectError, identifyCall, poll, trackCall, uid, startServer } from './helpers/server.js';
import { deployJourneys } from './helpers/journeys.js';
import { startReceiver } from './helpers/receiver.js';

const s = await startServer([], { HEADWATER_WEBHOOK_ALLOW_PRIVATE: 'true', HEADWATER_WEBHOOK_POLL_MS: '50' });
t.teardown(() => s.close());

const get = (token: string, path: string) => call(s.url, 'GET', path, { token });

t.test('erase a profile with merged records, events, a segment, executions, e-mail and webhook', async (t) => {
  const rcv = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => rcv.close());
  const fx = await createAppFixture(s);
  const admin = fx.admin;
  const hook = await call(s.url, 'POST', '/v1/webhooks', { token: admin, body: { data: { name: 'sink', config: { url: rcv.url } } } });
  t.equal(hook.status, 201);
  rcv.secret = hook.body.data.signingSecret;
  const seg = await call(s.url, 'POST', '/v1/segments', { token: admin, body: { data: { name: 'Pros', definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }] } } } });
  t.equal(seg.status, 201);
  await deployJourneys({ url: s.url, operatorToken: s.operatorToken, close: async () => {} }, fx, [{
    key: 'greet',
    body: `await ctx.webhook.send('sink', { hello: ctx.event.profileId });
      await ctx.email.send('note', { n: 1 });
      await ctx.waitForEvent(['never_happens'], { timeout: '1h' });`,
  }], [{ key: 'note', render: `(props) => ({ subject: 'Secret subject ' + props.n, html: '<p>secret</p>', text: 'secret body' })` }]);

  const user = uid('u');
  const anon = uid('anon');
  const address = `${user}@example.com`;
  // An anonymous profile with events, then merged into the user's profile.
  const a = await identifyCall(s, fx, { identifiers: { anonymousId: anon }, traits: { seen: true } });
  t.equal(a.status, 200);
  for (let i = 0; i < 3; i++) t.equal((await trackCall(s, fx, { identifiers: { anonymousId: anon }, event: 'Viewed', properties: { i } })).status, 201);
  const u = await identifyCall(s, fx, { identifiers: { userId: user, email: address }, traits: { plan: 'pro', email: address, consent: { onboarding: true } } });
  t.equal(u.status, 200);
  const m = await identifyCall(s, fx, { identifiers: { userId: user, anonymousId: anon } });
  t.equal(m.status, 200);
  const profileId: string = m.body.data.id;
  const mergedId = [a.body.data.id, u.body.data.id].find((x) => x !== profileId)!;
  t.not(mergedId, profileId, 'two records, one merged into the other');
  for (let i = 0; i < 3; i++) t.equal((await trackCall(s, fx, { identifiers: { userId: user }, event: 'Paid', properties: { amount: i } })).status, 201);
  t.equal((await trackCall(s, fx, { identifiers: { userId: user }, event: 'greet_go' })).status, 201);
  // Somebody else, who must keep everything.
  const other = uid('other');
  const o = await identifyCall(s, fx, { identifiers: { userId: other }, traits: { plan: 'pro' } });
  t.equal((await trackCall(s, fx, { identifiers: { userId: other }, event: 'Paid' })).status, 201);

  const waiting = await poll(() => get(admin, `/v1/executions?profileId=${profileId}`), (r) => r.body?.data?.[0]?.status === 'waiting', 30_000);
  t.equal(waiting.body.data[0]?.status, 'waiting', 'an execution waits for the profile');
  const deliveries = await poll(() => get(admin, `/v1/webhooks/${hook.body.data.id}/deliveries`), (r) => r.body?.data?.[0]?.status === 'succeeded', 15_000);
  t.equal(deliveries.body.data[0]?.status, 'succeeded', 'the webhook was delivered');
  const mails = await poll(() => get(admin, `/v1/emails?to=${encodeURIComponent(address)}`), (r) => r.body?.data?.length === 1, 15_000);
  const emailId = mails.body.data[0]?.id;
  t.ok(emailId, 'an e-mail was recorded');
  const evs = await poll(() => get(admin, `/v1/events?profileId=${profileId}`), (r) => r.body?.data?.length >= 7, 15_000);
  t.ok(evs.body.data.length >= 7, 'the events are stored');
  const members = await get(admin, `/v1/segments/${seg.body.data.id}/members`);
  t.ok(members.body.data.some((x: any) => x.profileId === profileId), 'a segment member');

  // The role matrix before the erasure.
  expectError(t, await call(s.url, 'POST', `/v1/profiles/${profileId}/erase`, { token: fx.org.sessions.member }), 403, 'forbidden', 'member');
  expectError(t, await call(s.url, 'POST', `/v1/profiles/${profileId}/erase`, { token: fx.key }), 401, 'invalid_key', 'API key');
  const stranger = await createOrg(s);
  expectError(t, await call(s.url, 'POST', `/v1/profiles/${profileId}/erase`, { token: stranger.sessions.admin }), 404, 'not_found', 'another org');
  expectError(t, await call(s.url, 'POST', '/v1/profiles/prf_unknown/erase', { token: admin }), 404, 'not_found', 'unknown profile');
  expectError(t, await call(s.url, 'POST', `/v1/profiles/${profileId}/erase`, { token: admin, body: { data: { suppress: 'yes' } } }), 422, 'validation_failed', 'bad body');

  const er = await call(s.url, 'POST', `/v1/profiles/${profileId}/erase`, { token: admin, body: { data: {} } });
  t.equal(er.status, 202, er.text);
  const erasure = er.body.data;
  t.match(erasure, { orgId: fx.org.org.id, profileId, suppress: false, completedAt: null });
  t.match(erasure.id, /^era_/);
  t.ok(['pending', 'completed'].includes(erasure.status));
  t.same(erasure.identifiers.map((i: any) => `${i.kind}=${i.value}`).sort(), [`anonymousId=${anon}`, `email=${address}`, `userId=${user}`], 'identifiers at request time, merged record included');
  const done = await poll(() => get(admin, `/v1/erasures/${erasure.id}`), (r) => r.body?.data?.status === 'completed', 60_000);
  t.equal(done.body.data.status, 'completed', 'completed');
  t.ok(done.body.data.completedAt, 'completedAt set');
  expectError(t, await get(stranger.sessions.admin, `/v1/erasures/${erasure.id}`), 404, 'not_found', 'another org reads the erasure');
  t.equal((await get(fx.org.sessions.member, `/v1/erasures/${erasure.id}`)).status, 200, 'a member reads it');
  const list = await get(admin, '/v1/erasures?limit=1');
  t.equal(list.body.data[0]?.id, erasure.id, 'listed newest first');
  t.equal((await get(stranger.sessions.admin, '/v1/erasures')).body.data.length, 0, 'another org lists none');

  // Nothing of it is shown any more.
  for (const id of [profileId, mergedId]) {
    expectError(t, await get(admin, `/v1/profiles/${id}`), 404, 'not_found', `profile ${id}`);
    t.equal((await get(admin, `/v1/events?profileId=${id}`)).body.data.length, 0, `no events of ${id}`);
    t.equal((await get(admin, `/v1/executions?profileId=${id}`)).body.data.length, 0, `no executions of ${id}`);
  }
  for (const [kind, value] of [['userId', user], ['anonymousId', anon], ['email', address]]) {
    t.equal((await get(admin, `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value!)}`)).body.data.length, 0, `no profile holds ${kind}`);
  }
  const viewed = await get(admin, '/v1/events?event=Viewed');
  t.equal(viewed.body.data.length, 0, 'the merged record\'s events are gone');
  const paid = await get(admin, '/v1/events?event=Paid');
  t.same(paid.body.data.map((e: any) => e.profileId), [o.body.data.id], 'only the other profile\'s events remain');
  const after = await get(admin, `/v1/segments/${seg.body.data.id}/members`);
  t.same(after.body.data.map((x: any) => x.profileId), [o.body.data.id], 'only the other profile is a member');
  expectError(t, await get(admin, `/v1/executions/${waiting.body.data[0].id}`), 404, 'not_found', 'the execution is gone');
  t.equal((await get(admin, `/v1/emails?to=${encodeURIComponent(address)}`)).body.data.length, 0, 'no e-mail to the address');
  const mail = await get(admin, `/v1/emails/${emailId}`);
  t.equal(mail.status, 200, 'the e-mail record stays');
  t.match(mail.body.data, { to: '', subject: '', text: '', html: '' }, 'without recipient or body');
  t.ok(['stored', 'sent', 'failed'].includes(mail.body.data.status), 'with its status');
  const dl = await get(admin, `/v1/webhooks/${hook.body.data.id}/deliveries`);
  t.equal(dl.body.data.length, 1, 'the delivery record stays');
  t.equal(dl.body.data[0]?.status, 'succeeded', 'with its status');
  t.equal(dl.body.data[0]?.attempts, deliveries.body.data[0].attempts, 'and its count');
  t.equal((await get(admin, `/v1/profiles/${o.body.data.id}`)).status, 200, 'the other profile stays');

  expectError(t, await call(s.url, 'POST', `/v1/profiles/${profileId}/erase`, { token: admin }), 404, 'not_found', 'already erased');
  // Not suppressed: the same person may come back as a new profile.
  const back = await identifyCall(s, fx, { identifiers: { userId: user } });
  t.equal(back.status, 200, 'not suppressed: accepted');
  t.not(back.body.data.id, profileId, 'a new profile');
});
