// journey_timeout through the service: with ample fuel, a computation longer than the activation's
// wall-clock budget fails the execution (the other failure codes are in executions.test.ts).
import t from 'tap';
import { createAppFixture, startServer, uid } from './helpers/server.js';
import { consenting, deployJourneys, ended, execution, fire, untilExecutions } from './helpers/journeys.js';

const s = await startServer(['--journey-fuel', '1000000', '--journey-timeout-ms', '300', '--journey-lease-ms', '5000']);
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;

t.test('a busy loop past the wall-clock budget fails with journey_timeout', async (t) => {
  await deployJourneys(s, fx, [{ key: 'slow', body: `await ctx.traits.set('began', true); let x = 0; for (let i = 0; i < 5e7; i++) x += i % 3; await ctx.traits.set('x', x);` }]);
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user });
  await fire(s, fx, user, 'slow_go');
  const [x] = await untilExecutions(s, admin, { journey: 'slow', profileId: p.id }, (l) => ended(l[0]), 30_000);
  t.equal(x?.status, 'failed');
  t.match(x?.error, /^journey_timeout: the activation took longer than 300 ms/);
  const d = (await execution(s, admin, x.id)).body.data;
  // The trait write is kept unless the budget ran out during it (a loaded machine).
  t.ok(d.journal.length <= 1 && d.journal.every((e: any) => e.call.name === 'traits.set'), 'entries recorded before the timeout are kept');
});
