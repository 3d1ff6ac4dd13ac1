// A `headwater serve` SIGKILLed after an activation's effects (a webhook, an e-mail counted in a
// real SMTP receiver, a tracked event) and before its journal entries are stored: after the restart
// each effect has happened once.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, createAppFixture, poll, uid, type TestServer } from './helpers/server.js';
import { settledDeliveries, settledEmails } from './helpers/outbox.js';
import { consenting, deployJourneys, eventsByProfile, fire, untilExecutions } from './helpers/journeys.js';
import { ownDatabase } from './helpers/db.js';
import { startReceiver } from './helpers/receiver.js';
import { startSmtp } from './helpers/smtp.js';
import { serveBin, type Proc } from './helpers/serve.js';
import { ownStreamPrefix } from './helpers/streams.js';

t.test('a serve process SIGKILLed between effects and their journal entries: each effect happens once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-exe-kill-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const token = `hwo_${randomBytes(24).toString('base64url')}`;
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const db = await ownDatabase(t);
  const env: Record<string, string> = {
    ...(db ? { DATABASE_URL: db } : {}), SMTP_URL: smtp.url, HEADWATER_EMAIL_POLL_MS: '50',
    HEADWATER_OPERATOR_TOKEN: token, HEADWATER_SECRET_KEY: randomBytes(32).toString('base64url'), HEADWATER_STREAM_PREFIX: ownStreamPrefix(t, 'k'),
    HEADWATER_WEBHOOK_ALLOW_PRIVATE: 'true', HEADWATER_WEBHOOK_POLL_MS: '50',
    HEADWATER_JOURNEY_FUEL: '100000', HEADWATER_JOURNEY_TIMEOUT_MS: '30000', HEADWATER_JOURNEY_LEASE_MS: '30000',
  };
  const rcv = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => rcv.close());
  let p: Proc = await serveBin(dir, env);
  t.teardown(() => { p.child.kill('SIGKILL'); });
  const s1: TestServer = { url: p.url, operatorToken: token, close: async () => {} };
  const fx = await createAppFixture(s1);
  const admin = fx.org.sessions.admin;
  const hook = await call(s1.url, 'POST', '/v1/webhooks', { token: admin, body: { data: { name: 'sink', config: { url: rcv.url } } } });
  rcv.secret = hook.body.data.signingSecret;
  // The effects, then a few seconds of computation: the activation's journal is stored at its end.
  await deployJourneys(s1, fx, [{
    key: 'effects',
    body: `await ctx.webhook.send('sink', { p: ctx.event.profileId });
      await ctx.email.send('note', { n: 1 });
      await ctx.events.track('effect_done', {});
      let x = 0; for (let i = 0; i < 6e6; i++) x += i % 7;
      await ctx.traits.set('finished', x);`,
  }], [{ key: 'note', render: `(props) => ({ subject: 'Note ' + props.n, html: '<p>n</p>', text: 'n' })` }]);
  const user = uid('u');
  const address = `${user}@example.com`;
  const prof = await consenting(s1, fx, { userId: user, traits: { email: address } });
  await fire(s1, fx, user, 'effects_go');
  const hit = await poll(async () => rcv.hits.length, (n) => n >= 1, 60_000, 20);
  t.equal(hit, 1, 'the webhook effect happened');
  // The e-mail reached the receiver and its outcome is stored (a kill mid-send would be a resend).
  const sent = await poll(() => call(s1.url, 'GET', `/v1/emails?to=${encodeURIComponent(address)}`, { token: admin }), (r) => r.body?.data?.[0]?.status === 'sent', 30_000, 20);
  t.equal(sent.body.data[0]?.status, 'sent', 'the e-mail effect happened');
  const before = (await call(s1.url, 'GET', `/v1/executions?journey=effects`, { token: admin })).body.data[0];
  t.equal(before?.status, 'running', 'its journal is not stored yet');
  t.equal(before?.journalEntries, 0);
  p.child.kill('SIGKILL');
  await new Promise((r) => p.child.once('exit', r));

  p = await serveBin(dir, env);
  const s2: TestServer = { url: p.url, operatorToken: token, close: async () => {} };
  const [x] = await untilExecutions(s2, admin, { journey: 'effects' }, (l) => l[0]?.status === 'completed', 120_000);
  t.equal(x?.status, 'completed', x?.error ?? 'completed after the restart');
  t.equal(x?.journalEntries, 4);
  const deliveries = await settledDeliveries(s2, admin, hook.body.data.id);
  t.same(deliveries.map((d) => d.status), ['succeeded'], 'one delivery, sent');
  t.same((await settledEmails(s2, admin, { to: address })).map((e) => e.status), ['sent'], 'one e-mail, sent');
  t.equal(rcv.hits.length, 1, `the webhook was delivered once (${rcv.hits.length})`);
  t.equal(smtp.mails.filter((m) => m.to.includes(address)).length, 1, 'the e-mail reached the SMTP receiver once');
  t.equal((await call(s2.url, 'GET', `/v1/emails?to=${encodeURIComponent(address)}`, { token: admin })).body.data.length, 1, 'one outbox row');
  const counts = await poll(() => eventsByProfile(s2, admin, 'effect_done'), (m) => m.size === 1, 60_000);
  t.same([...counts.entries()], [[prof.id, 1]], 'the tracked event was written once');
  const d = (await call(s2.url, 'GET', `/v1/executions/${x.id}`, { token: admin })).body.data;
  t.same(d.journal.map((e: any) => e.call.name), ['webhook.send', 'email.send', 'events.track', 'traits.set']);
  t.equal(d.journal[2].result.value.messageId, `${x.id}:2`);
});

