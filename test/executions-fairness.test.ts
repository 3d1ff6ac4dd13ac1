// Tenant safety of the journey runner (issue 23, item 5): a journey that restarts in a loop fails
// with journey_error saying which restart bound it hit, and while one org runs many such loops
// another org's trivial journey still completes within the bound docs/journeys-fairness.md states.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createAppFixture, createOrg, startServer, uid } from './helpers/server.js';
import { consenting, deployJourneys, ended, fire, untilExecutions } from './helpers/journeys.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { ownStreamPrefix } from './helpers/streams.js';

/** Trigger to completion of a trivial journey of one org while another org's loops run (docs). */
const BOUND_MS = 3000;

// Every runner on a database claims every due execution, so servers with restart settings of their
// own get a database (and streams) of their own in servers mode.
const own = async (t: { teardown(fn: () => unknown): void }) => ({ ...dbEnv(await ownDatabase(t)), HEADWATER_STREAM_PREFIX: ownStreamPrefix(t, 'f') });

t.test('restart loops of one org fail with their reason; another org\'s journey completes within the bound', async (t) => {
  const s = await startServer([], { ...(await own(t)), HEADWATER_JOURNEY_RESTARTS_PER_MINUTE: '10' });
  t.teardown(() => s.close());
  const a = await createAppFixture(s);
  const b = await createAppFixture(s, { org: await createOrg(s) });
  await deployJourneys(s, a, [{ key: 'spin', body: `await ctx.restart();` }]);
  await deployJourneys(s, b, [{ key: 'quick', body: `await ctx.traits.set('quick', true);` }]);
  const spinners = Array.from({ length: 40 }, () => uid('u'));
  await Promise.all(spinners.map((u) => consenting(s, a, { userId: u })));
  const bUser = uid('u');
  await consenting(s, b, { userId: bUser });
  await Promise.all(spinners.map((u) => fire(s, a, u, 'spin_go')));
  // Org A's loops are running (restarted at least once) before org B's trigger.
  await untilExecutions(s, a.org.sessions.admin, { journey: 'spin', limit: '100' }, (l) => l.length === 40 && l.every((x) => x.runId && x.step === 'restart'), 30_000);

  const began = Date.now();
  await fire(s, b, bUser, 'quick_go');
  const [q] = await untilExecutions(s, b.org.sessions.admin, { journey: 'quick' }, (l) => ended(l[0]), 30_000);
  const took = Date.now() - began;
  t.equal(q?.status, 'completed', 'org B\'s journey completed');
  t.ok(took < BOUND_MS, `within ${BOUND_MS} ms while org A's 40 executions restart in a loop (took ${took} ms)`);
  const aNow = (await untilExecutions(s, a.org.sessions.admin, { journey: 'spin', limit: '100' }, () => true)).filter((x) => !ended(x));
  t.ok(aNow.length > 0, `org A's loops were still running meanwhile (${aNow.length} of 40)`);

  const failed = await untilExecutions(s, a.org.sessions.admin, { journey: 'spin', limit: '100' }, (l) => l.length === 40 && l.every(ended), 60_000);
  t.ok(failed.every((x) => x.status === 'failed'), 'every loop failed');
  t.ok(failed.every((x) => /^journey_error: ctx\.restart\(\) called 11 times in [\d.]+ s of run time; an execution restarts at most 10 times per minute \(HEADWATER_JOURNEY_RESTARTS_PER_MINUTE\)$/.test(x.error)),
    `with the rate bound as its reason: ${failed[0]?.error}`);
});

t.test('an execution restarts at most HEADWATER_JOURNEY_MAX_RESTARTS times in all', async (t) => {
  const s = await startServer([], { ...(await own(t)), HEADWATER_JOURNEY_MAX_RESTARTS: '3' });
  t.teardown(() => s.close());
  const fx = await createAppFixture(s);
  await deployJourneys(s, fx, [{ key: 'again', body: `await ctx.restart();` }]);
  const u = uid('u');
  const p = await consenting(s, fx, { userId: u });
  await fire(s, fx, u, 'again_go');
  const [x] = await untilExecutions(s, fx.org.sessions.admin, { journey: 'again', profileId: p.id }, (l) => ended(l[0]), 30_000);
  t.equal(x?.status, 'failed');
  t.equal(x?.error, 'journey_error: ctx.restart() called 4 times; an execution restarts at most 3 times (HEADWATER_JOURNEY_MAX_RESTARTS)');
});
