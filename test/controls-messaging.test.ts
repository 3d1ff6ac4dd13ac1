// Messaging rules (settings.messaging) against a real SMTP receiver: a marketing e-mail over the
// frequency cap is an error result and nothing is sent; one inside quiet hours (the profile's time
// zone, an invalid one falling back to the default) waits and is sent at their end as one journal
// entry; transactional e-mail is never capped or deferred; bad settings are refused.
import t from 'tap';
import { call, createAppFixture, expectError, poll, startServer } from './helpers/server.js';
import { startSmtp } from './helpers/smtp.js';
import { dbEnv, ownDatabase } from './helpers/db.js';
import { consenting, deployJourneys, ended, execution, fire, untilExecutions } from './helpers/journeys.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const s = await startServer(['--smtp-url', smtp.url, '--email-from', 'Journeys <journeys@mail.example.com>', '--email-retry-base-ms', '100', '--email-poll-ms', '50'],
  dbEnv(await ownDatabase(t)));
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;
const settings = (data: unknown) => call(s.url, 'PATCH', '/v1/settings', { token: admin, body: { data } });
const render = `() => ({ subject: 'hi', html: '<p>hi</p>', text: 'hi' })`;

await deployJourneys(s, fx, [
  {
    key: 'promo',
    body: `const r = [];
      for (let i = 0; i < 3; i++) { try { await ctx.email.send('promo_t', {}); r.push('sent'); } catch (e) { r.push(e.code); } }
      await ctx.email.send('receipt_t', {});
      await ctx.traits.set('r', r.join(','));`,
  },
  { key: 'quiet', body: `await ctx.email.send('promo_t', {}); await ctx.traits.set('sent', true);` },
  { key: 'tx', body: `await ctx.email.send('receipt_t', {});` },
], [{ key: 'promo_t', render, sendClass: 'marketing' }, { key: 'receipt_t', render }]);

const mailsTo = (to: string) => smtp.mails.filter((m) => m.to.includes(to));

t.test('bad messaging settings are refused; the rules are read back', async (t) => {
  for (const [label, data, says] of [
    ['unknown time zone', { quietHours: { start: '21:00', end: '08:00', timezoneTrait: 'tz', defaultTimezone: 'Mars/Olympus' } }, 'defaultTimezone'],
    ['bad time of day', { quietHours: { start: '25:00', end: '08:00', timezoneTrait: 'tz', defaultTimezone: 'UTC' } }, 'start'],
    ['bad per', { frequencyCap: { max: 2, per: 'often' } }, 'per'],
    ['max 0', { frequencyCap: { max: 0, per: '1d' } }, 'max'],
  ] as const) expectError(t, await settings({ messaging: data }), 422, 'validation_failed', label, says);
  const r = await settings({ messaging: { frequencyCap: { max: 2, per: '1h' } } });
  t.same(r.body.data.messaging, { frequencyCap: { max: 2, per: '1h' }, quietHours: null });
});

t.test('over the frequency cap: frequency_capped and nothing sent; transactional unaffected', async (t) => {
  const to = 'capped@example.com';
  const p = await consenting(s, fx, { userId: 'u-cap', traits: { email: to } });
  await fire(s, fx, 'u-cap', 'promo_go');
  const [x] = await untilExecutions(s, admin, { journey: 'promo', profileId: p.id }, (l) => l.length === 1 && ended(l[0]), 20_000);
  t.equal(x.status, 'completed', x.error);
  const d = (await execution(s, admin, x.id)).body.data;
  t.same(d.journal.map((e: any) => e.result.ok), [true, true, false, true, true]);
  t.equal(d.journal[2].result.error.code, 'frequency_capped');
  t.match(d.journal[2].result.error.message, 'nothing was sent');
  await poll(async () => mailsTo(to).length, (n) => n >= 3, 10_000);
  const prof = await call(s.url, 'GET', `/v1/profiles/${p.id}`, { token: admin });
  t.equal(prof.body.data.traits.r, 'sent,sent,frequency_capped');
  const emails = await call(s.url, 'GET', `/v1/emails?limit=100`, { token: admin });
  t.equal(emails.body.data.filter((e: any) => e.to === to).length, 3, 'two marketing and one transactional e-mail stored');
  t.equal(mailsTo(to).length, 3, 'the receiver got two marketing and one transactional e-mail');
});

/** 'HH:MM:SS' of `at` in time zone `tz`. */
const local = (at: number, tz: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: tz, hourCycle: 'h23', hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(new Date(at));

t.test('inside quiet hours: sent at their end as one journal entry, in the profile\'s time zone', async (t) => {
  // Quiet from a minute ago until 12 s from now in Kathmandu (UTC+05:45): the default zone here.
  const now = Date.now();
  const end = Math.ceil((now + 12_000) / 1000) * 1000;
  const set = await settings({ messaging: { frequencyCap: null, quietHours: { start: local(now - 60_000, 'Asia/Kathmandu'), end: local(end, 'Asia/Kathmandu'), timezoneTrait: 'tz', defaultTimezone: 'Asia/Kathmandu' } } });
  t.equal(set.status, 200, set.text);
  const users = [['u-bad-tz', 'Not/AZone'], ['u-no-tz', undefined], ['u-london', 'Europe/London']] as const;
  const ps = [];
  for (const [u, tz] of users) ps.push(await consenting(s, fx, { userId: u, traits: { email: `${u}@example.com`, ...(tz ? { tz } : {}) } }));
  for (const [u] of users) await fire(s, fx, u, 'quiet_go');
  await fire(s, fx, 'u-bad-tz', 'tx_go');
  // London is outside the window (its local time is 5 h 45 min behind): sent at once.
  await poll(async () => mailsTo('u-london@example.com').length, (n) => n === 1, 10_000);
  t.ok(mailsTo('u-london@example.com')[0]!.receivedAt < end, 'a profile whose own zone is outside quiet hours is not deferred');
  await poll(async () => mailsTo('u-bad-tz@example.com').length, (n) => n === 1, 10_000);
  t.ok(mailsTo('u-bad-tz@example.com')[0]!.receivedAt < end, 'the transactional e-mail is sent inside quiet hours');
  for (const p of ps.slice(0, 2)) {
    const [w] = await untilExecutions(s, admin, { journey: 'quiet', profileId: p.id }, (l) => l[0]?.status === 'waiting', 10_000);
    t.equal(w.step, 'email.send', 'waits at the send');
    t.equal(Date.parse(w.timerDeadline), end, 'until the end of the quiet hours (invalid or missing zone: the default)');
  }
  for (const [i, p] of ps.slice(0, 2).entries()) {
    const [x] = await untilExecutions(s, admin, { journey: 'quiet', profileId: p.id }, (l) => ended(l[0]), 20_000);
    t.equal(x.status, 'completed', x.error);
    const d = (await execution(s, admin, x.id)).body.data;
    t.same(d.journal.map((e: any) => e.call.name), ['email.send', 'traits.set'], 'one journal entry for the deferred send');
    const u = users[i]![0];
    const m = await poll(async () => mailsTo(`${u}@example.com`).filter((x) => x.headers.subject === 'hi'), (l) => l.length >= (i === 0 ? 2 : 1), 10_000);
    const promo = m[m.length - 1]!;
    t.ok(promo.receivedAt >= end, `${u}: received ${promo.receivedAt - end} ms after the window's end`);
    t.ok(promo.receivedAt < end + 10_000, `${u}: soon after it`);
  }
});
