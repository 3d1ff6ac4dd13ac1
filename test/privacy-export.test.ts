// Export of a profile as NDJSON: the profile line, then its events, executions (journal and logs)
// and e-mails, each equal to what the read routes answer. Role matrix: members 403, another org 404.
import t from 'tap';
import { call, createAppFixture, createOrg, expectError, identifyCall, poll, trackCall, uid, startServer } from './helpers/server.js';
import { deployJourneys } from './helpers/journeys.js';

const s = await startServer();
t.teardown(() => s.close());
const get = (token: string, path: string) => call(s.url, 'GET', path, { token });

t.test('export matches the API', async (t) => {
  const fx = await createAppFixture(s);
  const admin = fx.admin;
  await deployJourneys({ url: s.url, operatorToken: s.operatorToken, close: async () => {} }, fx, [{
    key: 'hello',
    body: `ctx.log.info('hello ' + ctx.event.event); await ctx.email.send('note', { n: 2 }); await ctx.traits.set('greeted', true);`,
  }], [{ key: 'note', render: `(props) => ({ subject: 'Note ' + props.n, html: '<p>n</p>', text: 'n' })` }]);
  const user = uid('u');
  const anon = uid('a');
  const address = `${user}@example.com`;
  t.equal((await identifyCall(s, fx, { identifiers: { anonymousId: anon } })).status, 200);
  t.equal((await trackCall(s, fx, { identifiers: { anonymousId: anon }, event: 'Viewed' })).status, 201);
  const p = await identifyCall(s, fx, { identifiers: { userId: user, email: address }, traits: { email: address, consent: { onboarding: true } } });
  const merged = await identifyCall(s, fx, { identifiers: { userId: user, anonymousId: anon } });
  const id = merged.body.data.id;
  const calls = Array.from({ length: 30 }, (_, i) => ({ type: 'track', identifiers: { userId: user }, event: 'Paid', properties: { i }, messageId: uid('m') }));
  t.equal((await call(s.url, 'POST', '/v1/batch', { token: fx.key, body: { data: { sourceId: fx.source.id, calls } } })).status, 200);
  t.equal((await trackCall(s, fx, { identifiers: { userId: user }, event: 'hello_go' })).status, 201);
  const ex = await poll(() => get(admin, `/v1/executions?profileId=${id}`), (r) => r.body?.data?.[0]?.status === 'completed', 30_000);
  t.equal(ex.body.data[0]?.status, 'completed', 'the journey ran');
  const evs = await poll(() => get(admin, `/v1/events?profileId=${id}&limit=100`), (r) => r.body?.data?.length >= 33, 15_000);
  const mails = await poll(() => get(admin, `/v1/emails?to=${encodeURIComponent(address)}`), (r) => r.body?.data?.length === 1, 15_000);

  const r = await fetch(`${s.url}/v1/profiles/${id}/export`, { headers: { authorization: `Bearer ${admin}` } });
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type') ?? '', /^application\/x-ndjson/);
  const lines = (await r.text()).split('\n');
  t.equal(lines.pop(), '', 'ends with a newline');
  const items = lines.map((l) => JSON.parse(l));
  t.same(items.map((x) => x.type).filter((x, i, a) => a.indexOf(x) === i), ['profile', 'event', 'execution', 'email'], 'in order');
  const { type: _p, memberships, merged: mergedOut, ...profile } = items[0];
  t.same(profile, (await get(admin, `/v1/profiles/${id}`)).body.data, 'the profile as the API answers it');
  t.same(mergedOut.map((m: any) => m.id), (await get(admin, `/v1/profiles/${id}/merged`)).body.data.map((m: any) => m.id), 'the merged records');
  t.same(memberships, [], 'memberships');
  const events = items.filter((x) => x.type === 'event').map(({ type: _t, ...e }) => e);
  t.equal(events.length, evs.body.data.length, 'every event');
  t.same([...events].reverse(), evs.body.data, 'the events as the API answers them (oldest first)');
  const execs = items.filter((x) => x.type === 'execution').map(({ type: _t, ...e }) => e);
  t.same(execs, [(await get(admin, `/v1/executions/${ex.body.data[0].id}`)).body.data], 'the execution with journal and logs');
  t.ok(execs[0]?.logs?.length >= 1, 'its logs');
  const emails = items.filter((x) => x.type === 'email').map(({ type: _t, ...e }) => e);
  t.same(emails, [(await get(admin, `/v1/emails/${mails.body.data[0].id}`)).body.data], 'the e-mail');

  expectError(t, await get(fx.org.sessions.member, `/v1/profiles/${id}/export`), 403, 'forbidden', 'member');
  const stranger = await createOrg(s);
  expectError(t, await get(stranger.sessions.admin, `/v1/profiles/${id}/export`), 404, 'not_found', 'another org');
  expectError(t, await get(admin, '/v1/profiles/prf_nope/export'), 404, 'not_found', 'unknown');
  t.ok(p.status === 200);
});
