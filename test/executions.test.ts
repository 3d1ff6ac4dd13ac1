// The journey runtime through the public interface: triggers (consent, cooldown, one active per
// journey and profile, segment shorthand), the calls' effects (trait writes, tracked events,
// webhooks, logs), sleep and waitForEvent, restart, failure codes, cancel, and the executions
// routes (filters, cursor, org scoping).
import t from 'tap';
import { call, createAppFixture, createOrg, expectError, identifyCall, poll, startServer, uid } from './helpers/server.js';
import { consenting, deployJourneys, ended, execution, executions, fire, untilExecutions } from './helpers/journeys.js';

// Small budgets so each failure code is quick to provoke.
const s = await startServer(['--journey-fuel', '200', '--journey-timeout-ms', '20000', '--journey-memory-mb', '4', '--webhook-allow-private']);
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;

await deployJourneys(s, fx, [
  {
    key: 'three',
    body: `const me = await ctx.profile.get();
      ctx.log.info('hello ' + me.id);
      await ctx.traits.set('stage', 'welcomed');
      const ev = await ctx.events.track('welcomed', { from: ctx.event.event });
      ctx.log.warn('tracked ' + ev.event);`,
  },
  { key: 'napper', body: `await ctx.sleep('1500ms'); await ctx.traits.set('napped', true);` },
  { key: 'waiter', body: `const ev = await ctx.waitForEvent(['activated', 'upgraded'], { timeout: '2s' }); await ctx.traits.set('waited', ev ? ev.event : 'timeout');` },
  { key: 'cool', body: `await ctx.traits.unset('temp');`, enrollment: { cooldown: '1h' } },
  { key: 'again', body: `await ctx.traits.set('runs', (ctx.event.properties.n ?? 0) + 1); if (!ctx.event.properties.n) await ctx.restart({ ...ctx.event, properties: { n: 1 } });` },
  { key: 'hooks', body: `try { await ctx.webhook.send('nope', { a: 1 }); } catch (e) { ctx.log.error(e.code + ': ' + e.message); }` },
  { key: 'spin', body: `for (;;) {}` },
  { key: 'hog', body: `const a = []; for (;;) a.push([a.length, 2, 3, 4, 5, 6, 7, 8]);` },
  { key: 'thrower', body: `throw new Error('boom');` },
  { key: 'badcall', body: `await ctx.email.send('t'.repeat(65), {});` },
  { key: 'other', body: `await ctx.profiles.get(ctx.event.properties.target);` },
]);

t.test('a trigger starts one execution that runs profile.get, traits.set and events.track', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user, identifiers: { anonymousId: uid('anon') } });
  const tr = await fire(s, fx, user, 'three_go');
  t.equal(tr.status, 201, tr.text);
  const [x] = await untilExecutions(s, admin, { journey: 'three', profileId: p.id }, (l) => l.length === 1 && ended(l[0]));
  t.equal(x?.status, 'completed', x?.error);
  t.same(Object.keys(x).sort(), ['endedAt', 'environment', 'error', 'id', 'journalEntries', 'journeyKey', 'orgId', 'profileId', 'releaseId', 'runId', 'startedAt', 'status', 'step', 'timerDeadline', 'updatedAt', 'workflowId',
    'exitReason', 'converted', 'convertedAt', 'holdout', 'variants'].sort());
  t.equal(x.journalEntries, 3);
  t.equal(x.orgId, fx.org.org.id);
  t.equal(x.error, null);
  t.ok(x.endedAt);
  const d = (await execution(s, admin, x.id)).body.data;
  t.same(d.journal.map((e: any) => [e.at, e.call.name]), [[0, 'profile.get'], [1, 'traits.set'], [2, 'events.track']]);
  t.same(d.journal[0].call.args, {});
  t.equal(d.journal[0].result.value.id, p.id, 'profile.get answers the Profile');
  // The same identifiers, in the same order and time format, as the Profile resource of the API.
  const before = (await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data;
  t.same(d.journal[0].result.value.identifiers, before.identifiers, 'with its identifiers as GET /v1/profiles/{id} shows them');
  t.equal(d.journal[0].result.value.identifiers.length, 2);
  const { recordedAt, ...second } = d.journal[1];
  t.same(second, { call: { name: 'traits.set', args: { key: 'stage', value: 'welcomed' } }, result: { ok: true, value: null }, at: 1 });
  t.ok(Number.isFinite(Date.parse(recordedAt)), 'each entry says when it was recorded');
  t.equal(d.journal[2].result.value.event, 'welcomed');
  t.equal(d.journal[2].result.value.messageId, `${x.id}:2`, 'the tracked event carries <executionId>:<position>');
  t.same(d.logs.map((l: any) => [l.seq, l.level, l.message]), [[0, 'info', `hello ${p.id}`], [1, 'warn', 'tracked welcomed']]);
  const prof = await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin });
  t.equal(prof.body.data.traits.stage, 'welcomed', 'the trait went through identify');
  const evs = await poll(() => call(s.url, 'GET', `/v1/events?profileId=${p.id}&event=welcomed`, { token: admin }), (r) => r.body?.data?.length === 1, 10_000);
  t.equal(evs.body.data.length, 1, 'the tracked event landed once');
  t.equal(evs.body.data[0].properties.from, 'three_go');
});

t.test('consent gates the start: no consent or false consent starts nothing', async (t) => {
  const none = uid('u');
  const denied = uid('u');
  const okUser = uid('u');
  const pNone = await consenting(s, fx, { userId: none, purposes: {} });
  const pDenied = await consenting(s, fx, { userId: denied, purposes: { onboarding: false } });
  const pOk = await consenting(s, fx, { userId: okUser, purposes: { onboarding: true, other: false } });
  for (const u of [none, denied, okUser]) await fire(s, fx, u, 'three_go');
  // Landed batches go to the triggers in order: the last trigger's execution means the others were decided.
  await untilExecutions(s, admin, { journey: 'three', profileId: pOk.id }, (l) => l.length === 1 && ended(l[0]));
  t.equal((await executions(s, admin, { profileId: pNone.id })).body.data.length, 0, 'no consent recorded');
  t.equal((await executions(s, admin, { profileId: pDenied.id })).body.data.length, 0, 'consent false');
});

t.test('one running execution per (journey, profile); the next trigger after it ends starts another', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  await fire(s, fx, user, 'napper_go');
  const [w] = await untilExecutions(s, admin, { journey: 'napper', profileId: p.id }, (l) => l.length === 1 && l[0].status === 'waiting', 10_000);
  t.equal(w.step, 'sleep');
  t.ok(w.timerDeadline && Date.parse(w.timerDeadline) > Date.now() - 1000, 'waiting carries its timer deadline');
  await fire(s, fx, user, 'napper_go');
  // A later trigger of another journey, once started, means the second one was decided.
  await fire(s, fx, user, 'three_go');
  await untilExecutions(s, admin, { journey: 'three', profileId: p.id }, (l) => l.length === 1, 10_000);
  t.equal((await executions(s, admin, { journey: 'napper', profileId: p.id })).body.data.length, 1, 'the second trigger started nothing');
  const [done] = await untilExecutions(s, admin, { journey: 'napper', profileId: p.id }, (l) => l.length === 1 && ended(l[0]), 15_000);
  t.equal(done.status, 'completed');
  t.equal(done.journalEntries, 2);
  // The runner sets a timer for the deadline; without it the wake would come from the idle bound
  // (seconds later). 3 s leaves room for a loaded CI machine (both passes at once).
  const late = Date.parse(done.endedAt) - Date.parse(w.timerDeadline);
  t.ok(late < 3000, `resumed soon after its deadline (${late} ms)`);
  await fire(s, fx, user, 'napper_go');
  const l = await untilExecutions(s, admin, { journey: 'napper', profileId: p.id }, (l) => l.length === 2, 10_000);
  t.equal(l.length, 2, 'a new trigger after the end starts again (no cooldown)');
  t.ok(l[0].id > l[1].id, 'newest first');
});

t.test('enrollment.cooldown: a second trigger within the cooldown starts nothing', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user, traits: { temp: 1 } });
  await fire(s, fx, user, 'cool_go');
  await untilExecutions(s, admin, { journey: 'cool', profileId: p.id }, (l) => l.length === 1 && ended(l[0]));
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.temp, undefined, 'traits.unset removed the trait');
  // The removal is the runtime's alone: an identify request cannot carry it.
  await identifyCall(s, fx, { identifiers: { userId: user }, traits: { keep: 1 } });
  const r = await identifyCall(s, fx, { identifiers: { userId: user }, traits: {}, unset: ['keep'] });
  t.ok(r.status === 200 || r.status === 422, `a request with unset: ${r.status}`);
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.keep, 1, 'a request cannot remove a trait');
  await fire(s, fx, user, 'cool_go');
  await fire(s, fx, user, 'three_go'); // started once the cool_go before it was decided
  await untilExecutions(s, admin, { journey: 'three', profileId: p.id }, (l) => l.length === 1, 10_000);
  t.equal((await executions(s, admin, { journey: 'cool', profileId: p.id })).body.data.length, 1);
});

t.test('waitForEvent: answered by a later event, or null at its timeout', async (t) => {
  const a = uid('u');
  const b = uid('u');
  const pa = await consenting(s, fx, { userId: a });
  const pb = await consenting(s, fx, { userId: b });
  await fire(s, fx, a, 'upgraded'); // before the wait: must not answer it
  await fire(s, fx, a, 'waiter_go');
  await fire(s, fx, b, 'waiter_go');
  const [wa] = await untilExecutions(s, admin, { journey: 'waiter', profileId: pa.id }, (l) => l[0]?.status === 'waiting', 10_000);
  t.equal(wa.step, 'waitForEvent');
  await fire(s, fx, a, 'activated', { plan: 'pro' });
  const [xa] = await untilExecutions(s, admin, { journey: 'waiter', profileId: pa.id }, (l) => ended(l[0]), 15_000);
  t.equal(xa.status, 'completed', xa.error);
  const da = (await execution(s, admin, xa.id)).body.data;
  t.equal(da.journal[0].call.name, 'waitForEvent');
  t.same(da.journal[0].call.args, { event: ['activated', 'upgraded'], timeout: '2s' });
  t.equal(da.journal[0].result.value.event, 'activated', 'the whole Event');
  t.same(da.journal[0].result.value.properties, { plan: 'pro' });
  t.equal((await call(s.url, 'GET', `/v1/profiles/${pa.id}`, { token: admin })).body.data.traits.waited, 'activated');
  const [xb] = await untilExecutions(s, admin, { journey: 'waiter', profileId: pb.id }, (l) => ended(l[0]), 15_000);
  t.equal(xb.status, 'completed', xb.error);
  const db = (await execution(s, admin, xb.id)).body.data;
  t.same(db.journal[0].result, { ok: true, value: null }, 'null on timeout');
  // The journal in the message: a run that ended without the trait says what it did instead.
  t.equal((await call(s.url, 'GET', `/v1/profiles/${pb.id}`, { token: admin })).body.data.traits.waited, 'timeout', JSON.stringify(db.journal));
});

t.test('restart starts the run over: same execution, a new run id, the new event', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  await fire(s, fx, user, 'again_go');
  const [x] = await untilExecutions(s, admin, { journey: 'again', profileId: p.id }, (l) => ended(l[0]));
  t.equal(x.status, 'completed', x.error);
  t.not(x.runId, `run_${x.id.slice(4)}`, 'a new run id');
  const d = (await execution(s, admin, x.id)).body.data;
  t.same(d.journal.map((e: any) => e.call.name), ['traits.set'], 'the journal is the last run\'s');
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.runs, 2);
  t.equal((await executions(s, admin, { journey: 'again', profileId: p.id })).body.data.length, 1);
});

t.test('a refused call is a journal error result the journey can catch', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  await fire(s, fx, user, 'hooks_go');
  const [x] = await untilExecutions(s, admin, { journey: 'hooks', profileId: p.id }, (l) => ended(l[0]));
  t.equal(x.status, 'completed', x.error);
  const d = (await execution(s, admin, x.id)).body.data;
  t.equal(d.journal[0].result.ok, false);
  t.equal(d.journal[0].result.error.code, 'not_found');
  t.match(d.logs[0].message, /^not_found: no webhook named "nope"/);

  // profiles.get of another app's profile answers not_found too.
  const fx2 = await createAppFixture(s, { org: fx.org });
  const stranger = await consenting(s, fx2, { userId: uid('u') });
  await fire(s, fx, user, 'other_go', { target: stranger.id });
  const [o] = await untilExecutions(s, admin, { journey: 'other', profileId: p.id }, (l) => ended(l[0]));
  t.equal(o.status, 'failed', 'uncaught, the error result fails the run');
  t.match(o.error, /^journey_error: .*no profile .* in this journey's app/);
});

t.test('each failure code, provoked by a small journey', async (t) => {
  const cases: Array<[string, string]> = [
    ['spin', 'journey_fuel_exceeded'], ['hog', 'journey_memory_exceeded'], ['thrower', 'journey_error'], ['badcall', 'journey_output_invalid'],
  ];
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  for (const [key] of cases) await fire(s, fx, user, `${key}_go`);
  for (const [key, code] of cases) {
    const [x] = await untilExecutions(s, admin, { journey: key, profileId: p.id }, (l) => ended(l[0]), 30_000);
    t.equal(x?.status, 'failed', key);
    t.match(x?.error, new RegExp(`^${code}: `), key);
    t.ok(x?.endedAt, key);
  }
  const [bad] = (await executions(s, admin, { journey: 'badcall', profileId: p.id })).body.data;
  t.equal(bad.journalEntries, 0, 'an invalid call reaches no host and no journal');
});

t.test('cancel: a waiting execution becomes cancelled and its timer never fires', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  await fire(s, fx, user, 'napper_go');
  const [w] = await untilExecutions(s, admin, { journey: 'napper', profileId: p.id }, (l) => l[0]?.status === 'waiting', 10_000);
  expectError(t, await call(s.url, 'POST', `/v1/executions/${w.id}/cancel`, { token: fx.org.sessions.member }), 403, 'forbidden', 'a member');
  const other = await createOrg(s);
  expectError(t, await call(s.url, 'POST', `/v1/executions/${w.id}/cancel`, { token: other.sessions.admin }), 404, 'not_found', 'another org');
  expectError(t, await call(s.url, 'GET', `/v1/executions/${w.id}`, { token: other.sessions.admin }), 404, 'not_found', 'another org reads nothing');
  const c = await call(s.url, 'POST', `/v1/executions/${w.id}/cancel`, { token: fx.org.deployKey });
  t.equal(c.status, 200, c.text);
  t.equal(c.body.data.status, 'cancelled');
  t.equal(c.body.data.timerDeadline, null);
  t.ok(c.body.data.endedAt);
  expectError(t, await call(s.url, 'POST', `/v1/executions/${w.id}/cancel`, { token: admin }), 409, 'conflict', 'already cancelled');
  // Another profile's nap, started now, ends after the cancelled one's deadline: once it resumed, so
  // would the cancelled one have.
  const later = uid('u');
  const pl = await consenting(s, fx, { userId: later });
  await fire(s, fx, later, 'napper_go');
  const [l] = await untilExecutions(s, admin, { journey: 'napper', profileId: pl.id }, (x) => ended(x[0]), 15_000);
  t.ok(l && Date.parse(l.endedAt) > Date.parse(w.timerDeadline), 'a later nap resumed past the cancelled deadline');
  const after = (await execution(s, admin, w.id)).body.data;
  t.equal(after.status, 'cancelled', 'the timer did not resume it');
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.napped, undefined);
});

t.test('list filters, cursor and the member / deploy key reads', async (t) => {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  for (const k of ['three', 'thrower', 'cool']) await fire(s, fx, user, `${k}_go`);
  const all = await untilExecutions(s, admin, { profileId: p.id }, (l) => l.length === 3 && l.every(ended));
  t.equal(all.length, 3);
  const failed = (await executions(s, admin, { profileId: p.id, status: 'failed' })).body.data;
  t.same(failed.map((x: any) => x.journeyKey), ['thrower']);
  t.same((await executions(s, fx.org.sessions.member, { profileId: p.id, journey: 'cool' })).body.data.map((x: any) => x.journeyKey), ['cool']);
  t.equal((await executions(s, fx.org.deployKey, { profileId: p.id, release: all[0].releaseId })).body.data.length, 3);
  t.equal((await executions(s, admin, { profileId: p.id, release: 'psh_nope' })).body.data.length, 0);
  t.equal((await executions(s, admin, { profileId: p.id, since: new Date(Date.now() + 60_000).toISOString() })).body.data.length, 0);
  const first = await executions(s, admin, { profileId: p.id, limit: '2' });
  t.equal(first.body.data.length, 2);
  t.equal(first.body.meta.hasMore, true);
  const second = await executions(s, admin, { profileId: p.id, limit: '2', cursor: first.body.meta.nextCursor });
  t.same([...first.body.data, ...second.body.data].map((x: any) => x.id), all.map((x) => x.id));
  t.equal(second.body.meta.hasMore, false);
  expectError(t, await executions(s, admin, { status: 'sleeping' }), 422, 'validation_failed');
  expectError(t, await executions(s, admin, { cursor: 'nope' }), 422, 'validation_failed');
  expectError(t, await execution(s, admin, 'exe_missing'), 404, 'not_found');
});

t.test('segment shorthand and tracked events trigger journeys too', async (t) => {
  const seg = await call(s.url, 'POST', '/v1/segments', { token: admin, body: { data: { name: uid('pros'), definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }] } } } });
  t.equal(seg.status, 201, seg.text);
  await deployJourneys(s, fx, [
    { key: 'onenter', trigger: { segment: seg.body.data.id, on: 'entered' }, body: `await ctx.traits.set('entered', ctx.event.event + ':' + ctx.event.properties.segmentId);` },
    { key: 'chain', trigger: { event: 'chained_go' }, body: `await ctx.events.track('chain_link', {});` },
    { key: 'link', trigger: { event: 'chain_link' }, body: `await ctx.traits.set('linked', true);` },
  ]);
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user, traits: { plan: 'pro' } });
  const [x] = await untilExecutions(s, admin, { journey: 'onenter', profileId: p.id }, (l) => ended(l[0]), 20_000);
  t.equal(x?.status, 'completed', x?.error);
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.entered, `system.segment_entered:${seg.body.data.id}`);
  await fire(s, fx, user, 'chained_go');
  const [y] = await untilExecutions(s, admin, { journey: 'link', profileId: p.id }, (l) => ended(l[0]), 20_000);
  t.equal(y?.status, 'completed', 'an event a journey tracked started another journey');
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.linked, true);
});

t.test('an event that lands while the wait is being registered answers it', async (t) => {
  await deployJourneys(s, fx, [{
    key: 'racer',
    body: `await ctx.traits.set('phase', 'looping');
      let x = 0; for (let i = 0; i < 8e5; i++) x += i % 3;
      const ev = await ctx.waitForEvent('ping', { timeout: '20s' });
      await ctx.traits.set('pinged', ev ? ev.properties.n : null);`,
  }]);
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  await fire(s, fx, user, 'racer_go');
  // The activation is live (its first write went through) and still computing: ping now.
  await poll(() => call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin }), (r) => r.body.data.traits.phase === 'looping', 20_000, 50);
  await fire(s, fx, user, 'ping', { n: 7 });
  const [x] = await untilExecutions(s, admin, { journey: 'racer', profileId: p.id }, (l) => ended(l[0]), 60_000);
  t.equal(x?.status, 'completed', x?.error);
  const d = (await execution(s, admin, x.id)).body.data;
  t.equal(d.journal[1].result.value?.event, 'ping', 'the event answered the wait');
  t.equal((await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin })).body.data.traits.pinged, 7);
  t.ok(Date.parse(x.endedAt) - Date.parse(x.startedAt) < 20_000, 'well before the timeout');
});

t.test('running executions keep their version; new ones take the newest ready one', async (t) => {
  const v1 = await deployJourneys(s, fx, [{ key: 'ver', body: `await ctx.sleep('2s'); await ctx.traits.set('ran', 1);` }]);
  const a = uid('u');
  const pa = await consenting(s, fx, { userId: a });
  await fire(s, fx, a, 'ver_go');
  const [xa] = await untilExecutions(s, admin, { journey: 'ver', profileId: pa.id }, (l) => l[0]?.status === 'waiting', 20_000);
  const v2 = await deployJourneys(s, fx, [{ key: 'ver', body: `await ctx.traits.set('ran', 2);` }]);
  const b = uid('u');
  const pb = await consenting(s, fx, { userId: b });
  await fire(s, fx, b, 'ver_go');
  const [xb] = await untilExecutions(s, admin, { journey: 'ver', profileId: pb.id }, (l) => ended(l[0]), 20_000);
  const [xa2] = await untilExecutions(s, admin, { journey: 'ver', profileId: pa.id }, (l) => ended(l[0]), 20_000);
  t.equal(xa.releaseId, v1.id);
  t.equal(xa2.status, 'completed', xa2.error);
  t.equal(xb.releaseId, v2.id);
  t.equal((await call(s.url, 'GET', `/v1/profiles/${pa.id}`, { token: admin })).body.data.traits.ran, 1, 'the running one finished on version 1');
  t.equal((await call(s.url, 'GET', `/v1/profiles/${pb.id}`, { token: admin })).body.data.traits.ran, 2, 'the new one ran version 2');
});

t.test('email.send: rendered with validated props into the outbox; refusals are error results', async (t) => {
  await deployJourneys(s, fx, [{
    key: 'mailer',
    body: `try {
        const r = await ctx.email.send(ctx.event.properties.template, ctx.event.properties.props);
        ctx.log.info('sent ' + r.emailId + ' to ' + r.to);
      } catch (e) { ctx.log.error(e.code + ': ' + e.message); }`,
  }], [{
    key: 'welcome-email',
    propsSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 50 } } },
    render: `(props) => ({ subject: 'Hi ' + props.name, html: '<p>Hello ' + props.name + '</p>', text: 'Hello ' + props.name })`,
  }, ...([
    // Hostile propsSchemas: a catastrophic pattern (seconds of backtracking per extra 'a' elsewhere),
    // a lookahead (RE2 has none), more than 64 KiB of JSON.
    ['redos-email', { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } } }],
    ['lookahead-email', { type: 'object', properties: { code: { type: 'string', pattern: '^(?=a)a+$' } } }],
    ['huge-email', { type: 'object', properties: { code: { enum: ['x'.repeat(70 * 1024)] } } }],
  ] as const).map(([key, propsSchema]) => ({ key, propsSchema, render: `() => ({ subject: 's', html: '', text: 't' })` }))]);
  const run = async (traits: Record<string, unknown>, properties: Record<string, unknown>, identifiers?: Record<string, string>) => {
    const user = uid('u');
    const p = await consenting(s, fx, { userId: user, traits, identifiers });
    await fire(s, fx, user, 'mailer_go', properties);
    const [x] = await untilExecutions(s, admin, { journey: 'mailer', profileId: p.id }, (l) => ended(l[0]), 30_000);
    return { x, d: (await execution(s, admin, x.id)).body.data };
  };
  const { x, d } = await run({ email: 'ada@example.com' }, { template: 'welcome-email', props: { name: 'Ada' } });
  t.equal(x.status, 'completed', x.error);
  t.same(d.journal[0].call, { name: 'email.send', args: { template: 'welcome-email', props: { name: 'Ada' } } });
  t.match(d.logs[0].message, /^sent eml_\S+ to ada@example.com$/);
  const listed = await call(s.url, 'GET', `/v1/emails?executionId=${x.id}`, { token: admin });
  t.equal(listed.body.data.length, 1);
  t.equal(listed.body.data[0].id, d.journal[0].result.value.emailId);
  t.equal(listed.body.data[0].status, 'stored', 'no SMTP_URL: kept in the local outbox');
  t.equal(listed.body.data[0].subject, 'Hi Ada', 'rendered in the sandbox');
  t.equal(listed.body.data[0].text, 'Hello Ada');
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, RegExp, Record<string, string>?]> = [
    ['props break the propsSchema', { email: 'bob@example.com' }, { template: 'welcome-email', props: { name: 5 } }, /^validation_failed: props\/name/],
    ['no address', {}, { template: 'welcome-email', props: { name: 'Cy' } }, /^no_email_address: /],
    ['unknown template', { email: 'dee@example.com' }, { template: 'nope', props: {} }, /^not_found: /],
    ['a catastrophic pattern', { email: 'fay@example.com' }, { template: 'redos-email', props: { code: `${'a'.repeat(29)}b` } }, /^validation_failed: props\/code: must match pattern/],
    ['a pattern RE2 cannot run', { email: 'gus@example.com' }, { template: 'lookahead-email', props: { code: 'a' } }, /^validation_failed: template lookahead-email: propsSchema does not compile/],
    ['a propsSchema over 64 KiB', { email: 'hal@example.com' }, { template: 'huge-email', props: {} }, /^validation_failed: template huge-email: propsSchema has \d+ characters of JSON/],
    ['two addresses in the email identifier', {}, { template: 'welcome-email', props: { name: 'Ivy' } }, /^validation_failed: the profile's e-mail address .* is not exactly one address/,
      { email: 'victim@example.com, attacker@evil.example' }],
    ['a display name in the email identifier', {}, { template: 'welcome-email', props: { name: 'Jo' } }, /^validation_failed: the profile's e-mail address/,
      { email: 'Victim <victim@example.com>' }],
    ['a header break in the email identifier', {}, { template: 'welcome-email', props: { name: 'Kim' } }, /^validation_failed: the profile's e-mail address/,
      { email: 'victim@example.com\r\nBcc: attacker@evil.example' }],
  ];
  for (const [what, traits, props, re, identifiers] of cases) {
    const r = await run(traits, props, identifiers);
    t.equal(r.x.status, 'completed', what);
    t.equal(r.d.journal[0].result.ok, false, what);
    t.match(r.d.logs[0]?.message, re, what);
    t.equal((await call(s.url, 'GET', `/v1/emails?executionId=${r.x.id}`, { token: admin })).body.data.length, 0, `${what}: nothing in the outbox`);
  }
});
