// Journey controls through a pushed project: exit rules (while sleeping, while waiting for an
// event), goals (within and after the window, exit on goal), the execution fields and filters they
// set, and a bad option failing its version at push with its message.
import t from 'tap';
import { call, createAppFixture, poll, startServer } from './helpers/server.js';
import { consenting, deployJourneys, ended, executions, fire, untilExecutions } from './helpers/journeys.js';

const s = await startServer();
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;

await deployJourneys(s, fx, [
  { key: 'nap', body: `await ctx.sleep('1h'); await ctx.traits.set('napped', true);`, options: { exitOn: ['unsubscribed', 'churned'] } },
  { key: 'wait', body: `await ctx.waitForEvent('activated', { timeout: '1h' }); await ctx.traits.set('w', 1);`, options: { exitOn: 'unsubscribed' } },
  { key: 'conv', body: `await ctx.sleep('1h');`, options: { goal: { event: 'purchased', within: '3s' } } },
  { key: 'conv_exit', body: `await ctx.sleep('1h');`, options: { goal: { event: 'upgraded', within: '1h', exit: true } } },
]);

const one = async (journey: string, profileId: string, done: (x: any) => boolean) =>
  (await untilExecutions(s, admin, { journey, profileId }, (l) => l.length === 1 && done(l[0]), 20_000))[0];

t.test('exitOn ends a sleeping execution in the write that lands the exit event', async (t) => {
  const p = await consenting(s, fx, { userId: 'u-nap' });
  await fire(s, fx, 'u-nap', 'nap_go');
  const w = await one('nap', p.id, (x) => x.status === 'waiting');
  t.same([w.exitReason, w.converted, w.convertedAt, w.holdout, w.variants], [null, false, null, false, {}], 'the new fields, before any control applies');
  const other = await fire(s, fx, 'u-nap', 'clicked');
  t.equal(other.status, 201);
  t.equal((await executions(s, admin, { journey: 'nap', profileId: p.id })).body.data[0].status, 'waiting', 'an event the journey does not name changes nothing');
  await fire(s, fx, 'u-nap', 'churned');
  const x = await one('nap', p.id, ended);
  t.equal(x.status, 'cancelled');
  t.equal(x.exitReason, 'event:churned');
  t.equal(x.timerDeadline, null, 'its timer is dropped');
  const f = await executions(s, admin, { exitReason: 'event:churned' });
  t.same(f.body.data.map((e: any) => e.id), [x.id], 'filter exitReason');
});

t.test('exitOn ends an execution waiting for an event; the awaited event after it answers nothing', async (t) => {
  const p = await consenting(s, fx, { userId: 'u-wait' });
  await fire(s, fx, 'u-wait', 'wait_go');
  await one('wait', p.id, (x) => x.status === 'waiting' && x.step === 'waitForEvent');
  await fire(s, fx, 'u-wait', 'unsubscribed');
  const x = await one('wait', p.id, ended);
  t.same([x.status, x.exitReason, x.journalEntries], ['cancelled', 'event:unsubscribed', 0]);
  await fire(s, fx, 'u-wait', 'activated');
  const again = await executions(s, admin, { journey: 'wait', profileId: p.id });
  t.same(again.body.data.map((e: any) => e.status), ['cancelled'], 'still cancelled, not resumed');
});

t.test('goal: converted within the window, not after it; exit:true completes the execution', async (t) => {
  const [a, b, c] = [await consenting(s, fx, { userId: 'u-ga' }), await consenting(s, fx, { userId: 'u-gb' }), await consenting(s, fx, { userId: 'u-gc' })];
  await fire(s, fx, 'u-ga', 'conv_go');
  await fire(s, fx, 'u-gb', 'conv_go');
  await fire(s, fx, 'u-gc', 'conv_exit_go');
  const xa = await one('conv', a.id, (x) => x.status === 'waiting');
  const xb = await one('conv', b.id, (x) => x.status === 'waiting');
  await fire(s, fx, 'u-ga', 'purchased');
  const ca = await one('conv', a.id, (x) => x.converted);
  t.equal(ca.status, 'waiting', 'a goal without exit leaves the execution running');
  t.equal(ca.exitReason, null);
  t.ok(Date.parse(ca.convertedAt) >= Date.parse(xa.startedAt) && Date.parse(ca.convertedAt) - Date.parse(xa.startedAt) <= 3000, 'convertedAt is the goal event\'s write');
  // After the 3 s window the goal event no longer converts.
  await poll(async () => Date.now(), (now) => now > Date.parse(xb.startedAt) + 3500, 10_000, 200);
  await fire(s, fx, 'u-gb', 'purchased');
  await fire(s, fx, 'u-gb', 'marker');
  // The marker event landed after the goal event (same profile, later write): by then it was seen.
  await poll(() => fetchEvents(b.id, 'marker'), (n) => n === 1, 10_000);
  const cb = (await executions(s, admin, { journey: 'conv', profileId: b.id })).body.data[0];
  t.equal(cb.converted, false, 'a goal event after the window does not convert');
  await fire(s, fx, 'u-gc', 'upgraded');
  const cc = await one('conv_exit', c.id, ended);
  t.same([cc.status, cc.exitReason, cc.converted], ['completed', 'goal', true]);
  const conv = await executions(s, admin, { converted: 'true' });
  t.same(conv.body.data.map((e: any) => e.id).sort(), [ca.id, cc.id].sort(), 'filter converted=true');
  const not = await executions(s, admin, { converted: 'false', journey: 'conv' });
  t.same(not.body.data.map((e: any) => e.id), [cb.id], 'filter converted=false');
  t.equal((await executions(s, admin, { holdout: 'true' })).body.data.length, 0, 'filter holdout');
  t.equal((await executions(s, admin, { converted: 'maybe' })).status, 422, 'a bad filter is refused');
});

const fetchEvents = async (profileId: string, name: string) => {
  const r = await call(s.url, 'GET', `/v1/events?profileId=${profileId}&event=${name}`, { token: admin });
  return r.body?.data?.length ?? 0;
};

t.test('bad control options fail their version at push, with their message', async (t) => {
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ exitOn: [] }, 'exitOn must be an event name or an array of 1 to 20'],
    [{ goal: { event: 'x', within: 'soon' } }, 'goal.within must be'],
    [{ goal: { event: 'x', within: '1d', exit: 'yes' } }, 'goal.exit must be true or false'],
    [{ holdout: 51 }, 'holdout must be a percentage from 0 to 50'],
    [{ enrollment: { throttle: { limit: 0, per: '1m' } } }, 'enrollment.throttle.limit must be an integer'],
    [{ enrollment: { throttle: { limit: 5, per: '0s' } } }, 'enrollment.throttle.per must be'],
    [{ enrollment: { debounce: -1 } }, 'enrollment.debounce must be'],
  ];
  const push = await deployJourneys(s, fx, bad.map(([options], i) => ({ key: `bad${i}`, body: '', options })), [], { allowFailed: true });
  for (const [i, [, message]] of bad.entries()) {
    const v = push.versions.find((x: any) => x.key === `bad${i}`);
    t.equal(v?.status, 'failed', `bad${i} failed`);
    t.match(v?.error ?? '', message, `bad${i}: ${v?.error}`);
  }
});
