// Local journey tests: `headwater init` scaffolds a test that `headwater test` passes (node:test),
// a journey that sleeps a day and waits for an event runs in well under a second of wall time, a
// failing assertion fails the command, and runJourney's in-memory ctx behaves like the service's
// (e-mail props checked against the template's propsSchema, missing templates and webhooks, waits
// answered or timed out, restarts, invalid calls).
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hw, initProject } from './helpers/cli.js';
import { journey, template } from '../sdk/index.js';
import { runJourney } from '../sdk/testing.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'runJourney and headwater test run in memory');

t.test('a scaffolded project passes its own test; a day of sleeping and waiting takes under a second', async (t) => {
  const dir = await initProject(t);
  // A second test file: sleeps a day, waits for an event that comes two days later, and measures itself.
  mkdirSync(join(dir, 'test', 'slow'), { recursive: true });
  writeFileSync(join(dir, 'journeys', 'patient.ts'), `import { journey } from 'headwater/sdk';
export default journey({ key: 'patient', trigger: { event: 'signed_up' }, purpose: 'onboarding' }, async (ctx) => {
  await ctx.sleep('1d');
  const paid = await ctx.waitForEvent(['paid', 'upgraded'], { timeout: '7d' });
  await ctx.traits.set('paid_plan', paid ? paid.properties.plan : 'none');
});
`);
  writeFileSync(join(dir, 'test', 'slow', 'patient.test.ts'), `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runJourney } from 'headwater/sdk/testing';
import patient from '../../journeys/patient.ts';

test('a day of sleep and a wait answered two days later', async () => {
  const began = performance.now();
  const run = await runJourney(patient, { event: 'signed_up', clock: '2026-03-01T00:00:00Z', events: [{ event: 'paid', properties: { plan: 'pro' }, at: '3d' }] });
  const wall = performance.now() - began;
  assert.equal(run.status, 'completed');
  assert.deepEqual(run.journal.map((e) => e.call.name), ['sleep', 'waitForEvent', 'traits.set']);
  assert.equal(run.clock, '2026-03-04T00:00:00.000Z');
  assert.equal(run.profile.traits.paid_plan, 'pro');
  assert.ok(wall < 1000, 'wall time ' + wall + ' ms');
  console.log('WALL_MS ' + Math.round(wall));
});
`);
  const began = Date.now();
  const r = await hw(['test', dir]);
  t.equal(r.code, 0, `headwater test passes (${r.stdout.slice(-2000)} ${r.stderr})`);
  t.match(r.stdout, /# tests 3\n/);
  t.match(r.stdout, /# pass 3\n/);
  t.match(r.stdout, /# fail 0\n/);
  t.match(r.stdout, /ok \d+ - welcome e-mails a new sign-up/);
  const wall = Number(/WALL_MS (\d+)/.exec(r.stdout)?.[1]);
  t.ok(wall < 1000, `the virtual day ran in ${wall} ms of wall time`);
  t.comment(`headwater test: ${Date.now() - began} ms for the whole command; the journey run itself ${wall} ms`);

  // A failing assertion fails the command.
  writeFileSync(join(dir, 'test', 'broken.test.mjs'), `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runJourney } from 'headwater/sdk/testing';
import welcome from '../journeys/welcome.ts';
test('expects too much', async () => {
  const run = await runJourney(welcome, { event: 'signed_up' });
  assert.equal(run.status, 'completed', run.error?.code + ': ' + run.error?.message);
});
`);
  const bad = await hw(['test', dir]);
  t.equal(bad.code, 1, 'a failing test fails the command');
  t.match(bad.stdout, /not ok \d+ - expects too much/);
  t.match(bad.stdout, /journey_error: Error: no ready template "welcome-email"/, 'an e-mail to a template the test did not pass fails like a missing one');
});

t.test('headwater test refuses a directory without tests in one line', async (t) => {
  const dir = await initProject(t);
  const r = await hw(['test', join(dir, 'journeys')]);
  t.equal(r.code, 1);
  t.match(r.stderr, /^headwater: no test files \(\*\.test\.ts\|js\) under .*journeys\n$/);
});

const greeter = template({
  key: 'greet', sendClass: 'transactional', verifyLink: false,
  propsSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
}, (p: { name: string }) => ({ subject: `Hi ${p.name}`, html: `<p>${p.name}</p>`, text: p.name }));
const profile = { traits: { email: 'a@example.com' } };

const CASES: Array<{ name: string; body: (ctx: any) => Promise<void>; opts?: Record<string, unknown>; check: (r: Awaited<ReturnType<typeof runJourney>>) => unknown }> = [
  {
    name: 'props that break the propsSchema are refused like on the service',
    body: async (ctx) => { await ctx.email.send('greet', { name: 3 }); },
    check: (r) => [r.status, r.error?.code, r.error?.message, r.journal[0]?.result],
  },
  {
    name: 'an e-mail renders with the template code',
    body: async (ctx) => { await ctx.email.send('greet', { name: 'Ada' }); },
    check: (r) => [r.status, r.emails.map((e) => [e.to, e.subject, e.html, e.text])],
  },
  {
    name: 'no address: no_email_address, catchable',
    opts: { profile: { traits: {} } },
    body: async (ctx) => { try { await ctx.email.send('greet', { name: 'Ada' }); } catch (e: any) { ctx.log.warn(e.code); } },
    check: (r) => [r.status, r.logs.map((l) => l.message)],
  },
  {
    name: 'a wait with no answering event times out after its timeout',
    opts: { events: [{ event: 'paid', at: '3h' }] },
    body: async (ctx) => { const e = await ctx.waitForEvent('paid', { timeout: '1h' }); await ctx.traits.set('paid', e !== null); },
    check: (r) => [r.elapsedMs, r.traits.map((x: any) => [x.key, x.value])],
  },
  {
    name: 'an event that came before the wait began does not answer it',
    opts: { events: [{ event: 'paid', at: '1h' }] },
    body: async (ctx) => { await ctx.sleep('2h'); const e = await ctx.waitForEvent('paid', { timeout: '1h' }); await ctx.traits.set('paid', e !== null); },
    check: (r) => [r.elapsedMs, r.profile.traits.paid],
  },
  {
    name: 'an unregistered webhook is not_found when the registry is given',
    opts: { webhooks: ['crm'] },
    body: async (ctx) => { await ctx.webhook.send('crm', { a: 1 }); await ctx.webhook.send('erp', {}); },
    check: (r) => [r.status, r.error?.message, r.webhooks.map((w) => w.destination)],
  },
  {
    name: 'a bad duration is journey_output_invalid',
    body: async (ctx) => { await ctx.sleep('soon'); },
    check: (r) => [r.status, r.error?.code],
  },
  {
    name: 'a restart starts a fresh run with the new event',
    body: async (ctx) => { await ctx.traits.set('n', ctx.event.properties.n ?? 0); if (!ctx.event.properties.n) await ctx.restart({ event: 'again', properties: { n: 1 } }); },
    check: (r) => [r.status, r.runs, r.traits.map((x: any) => x.value), r.journal.length],
  },
  {
    name: 'a handler awaiting nothing a ctx call settles fails instead of hanging',
    body: async () => { await new Promise(() => {}); },
    check: (r) => [r.status, r.error?.code],
  },
  {
    name: 'an uncaught throw is journey_error',
    body: async () => { throw new TypeError('nope'); },
    check: (r) => [r.status, r.error],
  },
];
const EXPECTED: unknown[] = [
  ['failed', 'journey_error', 'Error: props/name: must be string', { ok: false, error: { code: 'validation_failed', message: 'props/name: must be string' } }],
  ['completed', [['a@example.com', 'Hi Ada', '<p>Ada</p>', 'Ada']]],
  ['completed', ['no_email_address']],
  [3_600_000, [['paid', false]]],
  [3 * 3_600_000, false],
  ['failed', 'Error: no webhook named "erp" in this org', ['crm']],
  ['failed', 'journey_output_invalid'],
  ['completed', 2, [0, 1], 1],
  ['failed', 'journey_error'],
  ['failed', { code: 'journey_error', message: 'TypeError: nope' }],
];

t.test('runJourney: the in-memory ctx, case by case', async (t) => {
  for (const [i, c] of CASES.entries()) {
    const def = journey({ key: 'k', trigger: { event: 'go' }, purpose: 'p' }, c.body);
    const r = await runJourney(def, { event: 'go', profile, templates: [greeter], ...c.opts });
    t.same(c.check(r), EXPECTED[i], c.name);
  }
  // Same input, same output: the run is deterministic.
  const def = journey({ key: 'k', trigger: { event: 'go' }, purpose: 'p' }, CASES[1]!.body);
  t.same(await runJourney(def, { event: 'go', profile, templates: [greeter] }), await runJourney(def, { event: 'go', profile, templates: [greeter] }));
});
