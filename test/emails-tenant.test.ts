// Templates are tenant input. Through HTTP against a real service: a propsSchema with a catastrophic
// pattern is answered within the activation's deadline while /health/live stays fast (the check runs
// off the event loop, on RE2), and a check still running at the deadline is cut there; two orgs whose propsSchemas share an `$id` both work, each with its own
// schema; the scaffolded template escapes profile data in html and keeps the subject on one line.
// The bad inputs one by one (lookahead, oversized schema, recipient lists): executions.test.ts.
import t from 'tap';
import { SCAFFOLD } from '../cli/project/scaffold.js';
import { call, createAppFixture, sleep, startServer, uid, type AppFixture } from './helpers/server.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { consenting, deployJourneys, ended, execution, fire, untilExecutions } from './helpers/journeys.js';

const DEADLINE_MS = 5000;
// A database of its own: on a shared one, another test file's runner (with a 30 s budget) could
// activate these executions.
const s = await startServer(['--journey-timeout-ms', String(DEADLINE_MS)], dbEnv(await ownDatabase(t)));
t.teardown(() => s.close());

// Sends the template named by the trigger's properties and logs the outcome.
const MAILER = {
  key: 'mailer',
  body: `try {
      const r = await ctx.email.send(ctx.event.properties.template, ctx.event.properties.props);
      ctx.log.info('sent to ' + r.to);
    } catch (e) { ctx.log.error(e.code + ': ' + e.message); }`,
};

/** Fires the mailer for a new consenting profile; answers the ended execution and its first log line. */
async function mail(fx: AppFixture, properties: Record<string, unknown>, traits: Record<string, unknown> = { email: 'ada@example.com' }) {
  const user = uid('u');
  const p = await consenting(s, fx, { userId: user, traits });
  const began = Date.now();
  const tr = await fire(s, fx, user, 'mailer_go', properties);
  if (tr.status !== 201) throw new Error(`track: ${tr.status} ${tr.text}`);
  const [x] = await untilExecutions(s, fx.org.sessions.admin, { journey: 'mailer', profileId: p.id }, (l) => ended(l[0]), 30_000);
  const d = (await execution(s, fx.org.sessions.admin, x.id)).body.data;
  return { x, d, log: d.logs[0]?.message as string | undefined, tookMs: Date.now() - began };
}

// Liveness is bounded at 250 ms: the pattern on the event loop would stall it for about 20 s, while a
// loaded two-core CI machine (another test file beside this one) adds stalls of 100 ms or more anyway.
t.test('a catastrophic propsSchema pattern is answered within the deadline; liveness stays under 250 ms', async (t) => {
  const fx = await createAppFixture(s);
  await deployJourneys(s, fx, [MAILER], [{
    key: 'redos-email', propsSchema: { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } } },
    render: `(p) => ({ subject: 'Code ' + p.code, html: '', text: p.code })`,
  }]);
  // The pattern still applies: matching props are sent (this also starts the props thread).
  const good = await mail(fx, { template: 'redos-email', props: { code: 'aaaa' } });
  t.equal(good.log, 'sent to ada@example.com', 'matching props pass');

  let worst = 0;
  let probes = 0;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t0 = performance.now();
      const r = await call(s.url, 'GET', '/health/live');
      if (r.status === 200) probes++;
      worst = Math.max(worst, performance.now() - t0);
      await sleep(10);
    }
  })();
  // 29 a's and a b: about 20 s of backtracking for a backtracking engine on the event loop.
  const bad = await mail(fx, { template: 'redos-email', props: { code: `${'a'.repeat(29)}b` } });
  probing = false;
  await probe;
  t.equal(bad.x.status, 'completed', bad.x.error);
  t.match(bad.log, /^validation_failed: props\/code: must match pattern/);
  t.ok(bad.tookMs < DEADLINE_MS, `answered in ${bad.tookMs} ms, within the ${DEADLINE_MS} ms deadline`);
  t.equal((await call(s.url, 'GET', `/v1/emails?executionId=${bad.x.id}`, { token: fx.admin })).body.data.length, 0, 'nothing in the outbox');
  t.ok(probes > 0, `${probes} liveness probes answered meanwhile`);
  t.ok(worst < 250, `slowest /health/live ${worst.toFixed(1)} ms`);
});

t.test('a props check still running at the deadline is cut there; the next check works', async (t) => {
  const fx = await createAppFixture(s);
  await deployJourneys(s, fx, [MAILER], [{
    // Two branches of a oneOf that both recurse into `x`: every level evaluates both, so a chain of
    // n nested `x` costs 2^n evaluations (22 levels: 3.6 s on this machine kind; 40: never ends).
    // uniqueItems over a list was slow enough only on a loaded machine: on a quiet one it finished
    // just inside the deadline.
    key: 'slow-email', propsSchema: { oneOf: [
      { type: 'object', properties: { x: { $ref: '#' } } },
      { type: 'object', required: ['x'], properties: { x: { $ref: '#' } } },
    ] },
    render: `() => ({ subject: 'Slow', html: '', text: 'slow' })`,
  }]);
  let chain: Record<string, unknown> = {};
  for (let i = 0; i < 40; i++) chain = { x: chain };
  const slow = await mail(fx, { template: 'slow-email', props: chain });
  t.ok(slow.tookMs < DEADLINE_MS + 3000, `ended after ${slow.tookMs} ms (deadline ${DEADLINE_MS} ms)`);
  // Whichever sees the deadline first: the activation (journey_timeout) or the host (an error result).
  t.ok(slow.x.status === 'failed' ? /^journey_timeout/.test(slow.x.error) : /^validation_failed: .*did not finish/.test(slow.log ?? ''),
    `${slow.x.status}: ${slow.x.error ?? slow.log}`);
  const next = await mail(fx, { template: 'slow-email', props: {} });
  t.equal(next.log, 'sent to ada@example.com', 'a fresh props thread answers');
});

t.test('two orgs whose propsSchemas share an $id both work, each with its own schema', async (t) => {
  const [a, b] = [await createAppFixture(s), await createAppFixture(s)];
  for (const [fx, field] of [[a, 'alpha'], [b, 'beta']] as const) {
    await deployJourneys(s, fx, [MAILER], [{
      key: 'card', propsSchema: { $id: 'shared-props', type: 'object', required: [field], properties: { [field]: { type: 'string' } } },
      render: `(p) => ({ subject: 'Card', html: '', text: JSON.stringify(p) })`,
    }]);
  }
  for (const [fx, field, other] of [[a, 'alpha', 'beta'], [b, 'beta', 'alpha'], [a, 'alpha', 'beta']] as const) {
    const ok = await mail(fx, { template: 'card', props: { [field]: 'x' } });
    t.equal(ok.log, 'sent to ada@example.com', `${field}: its own props pass`);
    const no = await mail(fx, { template: 'card', props: { [other]: 'x' } });
    t.equal(no.log, `validation_failed: props: must have required property '${field}'`, `${field}: its own schema applies`);
  }
});

t.test('the scaffolded template escapes profile data in html and keeps the subject on one line', async (t) => {
  const fx = await createAppFixture(s);
  await deployJourneys(s, fx, [{
    key: 'welcome', body: `const me = await ctx.profile.get(); await ctx.email.send('welcome-email', { name: String(me.traits.name) });`,
  }], [{
    key: 'welcome-email', code: SCAFFOLD['templates/welcome-email.ts']!, render: '',
    propsSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  }]);
  const user = uid('u');
  const name = `<img src=x onerror="alert('1')"> & Eve\r\nBcc: attacker@evil.example`;
  const p = await consenting(s, fx, { userId: user, traits: { name, email: 'eve@example.com' } });
  await fire(s, fx, user, 'welcome_go');
  const [x] = await untilExecutions(s, fx.admin, { journey: 'welcome', profileId: p.id }, (l) => ended(l[0]), 30_000);
  t.equal(x.status, 'completed', x.error);
  const [e] = (await call(s.url, 'GET', `/v1/emails?executionId=${x.id}`, { token: fx.admin })).body.data;
  t.equal(e?.to, 'eve@example.com');
  t.equal(e?.subject, `Welcome, <img src=x onerror="alert('1')"> & Eve Bcc: attacker@evil.example!`, 'CR/LF became a space');
  t.equal(e?.html, `<p>Welcome aboard, &lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt; &amp; Eve\r\nBcc: attacker@evil.example.</p>`, 'escaped');
});
