// Journey e-mail through HTTP against a real SMTP receiver (`smtp-server`): the test send arrives
// once with its subject, text and stable Message-ID; list, fetch, filters and cursors; the
// idempotent enqueue the journey runtime uses; retries while the receiver is down; a permanent
// refusal; auth, org scoping and bad input; expired claims; a journey's e-mail end to end; and
// e-mails pending at a stop (one cut mid-send) sent exactly once by the next server. Each test's
// servers use a database of their own (helpers/db.ts): any sender takes any pending e-mail of its
// database. The local outbox (no SMTP_URL) is in emails-outbox.test.ts.
import t, { type Test } from 'tap';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, call, clockPast, createOrg, expectError, poll, until, uid, type OrgCreds, startWorker, type TestServer } from './helpers/server.js';
import { deadPort } from './helpers/receiver.js';
import { startSmtp, type SmtpReceiver } from './helpers/smtp.js';
import { dbEnv, ownDatabase, tellAsAnotherProcess } from './helpers/db.js';
import { enqueueEmail } from '../journeys/email/mod.js';
import { createAppFixture } from './helpers/server.js';
import { consenting, deployJourneys, ended, execution, fire, untilExecutions } from './helpers/journeys.js';

const FAST = ['--email-retry-base-ms', '100', '--email-poll-ms', '50'];

const api = (s: TestServer, token: string) => (method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token, body: data === undefined ? undefined : { data } });

/**
 * A pg pool on the server's database (embedded: its Unix socket), for the runtime's entry point;
 * one per server, ended when the file ends. Embedded Postgres is one session that this connection
 * shares with the service: a connection closed while the service runs ends the session's open
 * transaction with it (a concurrent org creation then failed on its foreign key).
 */
const pools = new Map<TestServer, pg.Pool>();
t.teardown(async () => { for (const p of pools.values()) await p.end().catch(() => {}); });
function poolOf(_t: Test, s: TestServer): pg.Pool {
  let pool = pools.get(s);
  if (pool) return pool;
  const dbUrl = s.databaseUrl;
  pool = dbUrl ? new pg.Pool({ connectionString: dbUrl, max: 1 })
    : new pg.Pool({ host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
  // Its server stops (or its database is dropped) before the file ends: an idle client's error then is expected.
  pool.on('error', () => {});
  pools.set(s, pool);
  return pool;
}

const getEmail = async (s: TestServer, org: OrgCreds, id: string) => (await api(s, org.sessions.admin)('GET', `/v1/emails/${id}`)).body?.data;
const settled = (s: TestServer, org: OrgCreds, id: string, timeoutMs = 15_000) =>
  poll(() => getEmail(s, org, id), (e) => !!e && e.status !== 'pending', timeoutMs, 50);
const testSend = async (s: TestServer, org: OrgCreds, data: Record<string, unknown>) => {
  const r = await api(s, org.sessions.admin)('POST', '/v1/emails/test', data);
  if (r.status !== 202) throw new Error(`test send: ${r.status} ${r.text}`);
  return r.body.data;
};
/**
 * Rows this file writes straight into the database stand for another process's work, and this
 * wakes the server as that process would (docs/journeys-runtime.md, "Idle"). An embedded server is
 * its database's only user: every enqueue of its own wakes its sender, so a test send does; the pass
 * it starts claims every due row. A server on PostgreSQL is told over LISTEN/NOTIFY.
 */
const wakeAsAnotherProcess = async (s: TestServer, org: OrgCreds) => {
  if (s.databaseUrl) await tellAsAnotherProcess(s.databaseUrl, 'email');
  else await testSend(s, org, { to: 'wake@example.com', subject: 'wake' });
};
/**
 * `n` later test e-mails, polled until `smtp` has them all: a send claimed before them (a second send
 * of a row, a claim that ignored a lease) has gone out by then. True when they all arrived.
 */
const markersArrived = async (s: TestServer, org: OrgCreds, smtp: SmtpReceiver, n = 1) => {
  const to = Array.from({ length: n }, () => `${uid('marker')}@example.com`);
  for (const x of to) await testSend(s, org, { to: x, subject: 'marker' });
  return until(() => to.every((x) => smtp.mails.some((m) => m.to.includes(x))), 15_000, 20);
};

t.test('with an SMTP transport', async (t) => {
  const port = await deadPort();
  let smtp: SmtpReceiver = await startSmtp(port, (rcpt) => (rcpt.startsWith('refuse') ? 550 : undefined));
  t.teardown(() => smtp.close());
  const s = await startServer(['--smtp-url', `smtp://127.0.0.1:${port}`, '--email-from', 'Journeys <journeys@mail.example.com>', '--email-attempts', '4', ...FAST], dbEnv(await ownDatabase(t)));
  t.teardown(() => s.close());

  t.test('the test send arrives once with subject, text and a stable Message-ID', async (t) => {
    const org = await createOrg(s);
    const before = smtp.mails.length;
    const e = await testSend(s, org, { to: 'Ops@Example.com', subject: 'Check ✓ settings', text: 'Hello from the test send.' });
    t.match(e, { orgId: org.org.id, executionId: null, template: '', to: 'Ops@Example.com', subject: 'Check ✓ settings', text: 'Hello from the test send.', html: '', status: 'pending', attempts: 0, lastError: null, messageId: null, sentAt: null });
    t.match(e.id, /^eml_/);
    const done = await settled(s, org, e.id);
    t.equal(done.status, 'sent', JSON.stringify(done));
    t.equal(done.attempts, 1);
    t.equal(done.lastError, null);
    t.equal(done.messageId, `<${e.id}@mail.example.com>`, 'Message-ID from the row id and the From domain');
    t.ok(Date.parse(done.sentAt) >= Date.parse(done.createdAt), 'sentAt set');
    t.ok(await markersArrived(s, org, smtp), 'a later e-mail arrived');
    const mine = smtp.mails.slice(before).filter((m) => m.headers['message-id'] === done.messageId);
    t.equal(mine.length, 1, 'received exactly once');
    const m = mine[0]!;
    t.same(m.to, ['Ops@example.com'], 'envelope recipient (nodemailer normalises the domain)');
    t.equal(m.from, 'journeys@mail.example.com', 'envelope sender');
    t.match(m.headers.from, /journeys@mail\.example\.com/);
    t.match(m.headers.subject, /=\?UTF-8\?|Check/, 'subject header present (encoded: non-ASCII)');
    t.ok(m.raw.includes('Hello from the test send.'), 'text body');
    t.match(m.headers['content-type'], /text\/plain/, 'no HTML part: plain text');

    const d = await testSend(s, org, { to: 'ops@example.com' });
    const dd = await settled(s, org, d.id);
    t.equal(dd.status, 'sent');
    t.equal(dd.subject, 'Headwater test e-mail', 'default subject');
    t.ok(dd.text.includes(org.org.id), 'default text names the org');
  });

  t.test('a journey\'s ctx.email.send arrives rendered, once, linked to its execution', async (t) => {
    const fx = await createAppFixture(s);
    const admin = fx.org.sessions.admin;
    await deployJourneys(s, fx, [
      { key: 'welcome', body: `const me = await ctx.profile.get(); const r = await ctx.email.send('welcome-email', { name: me.traits.name });` },
    ], [
      { key: 'welcome-email', propsSchema: { type: 'object', required: ['name'] },
        render: `(p) => ({ subject: 'Welcome, ' + p.name, html: '<p>Hello <b>' + p.name + '</b></p>', text: 'Hello ' + p.name })` },
    ]);
    const user = `u-${Math.random().toString(36).slice(2, 10)}`;
    const p = await consenting(s, fx, { userId: user, traits: { name: 'Ada', email: 'ada@example.com' } });
    const tr = await fire(s, fx, user, 'welcome_go');
    t.equal(tr.status, 201, tr.text);
    const [x] = await untilExecutions(s, admin, { journey: 'welcome', profileId: p.id }, (l) => l.length === 1 && ended(l[0]));
    t.equal(x?.status, 'completed', x?.error);
    const d = (await execution(s, admin, x.id)).body.data;
    const call = d.journal.find((j: any) => j.call.name === 'email.send');
    t.ok(call?.result?.ok, JSON.stringify(call));
    const emailId = call.result.value.emailId;
    const e = await settled(s, fx.org, emailId);
    t.match(e, { status: 'sent', executionId: x.id, template: 'welcome-email', to: 'ada@example.com', subject: 'Welcome, Ada', text: 'Hello Ada', html: '<p>Hello <b>Ada</b></p>', attempts: 1 });
    t.same((await api(s, admin)('GET', `/v1/emails?executionId=${x.id}`)).body.data.map((m: any) => m.id), [emailId], 'listed under its execution');
    t.ok(await markersArrived(s, fx.org, smtp), 'a later e-mail arrived');
    const got = smtp.mails.filter((m) => m.headers['message-id'] === e.messageId);
    t.equal(got.length, 1, 'arrived once');
    t.equal(got[0]?.headers.subject, 'Welcome, Ada');
    t.same(got[0]?.to, ['ada@example.com']);
  });

  t.test('an email identifier naming two recipients sends nothing; one address is sent', async (t) => {
    const fx = await createAppFixture(s);
    const admin = fx.org.sessions.admin;
    await deployJourneys(s, fx, [
      { key: 'notify', body: `try { await ctx.email.send('note', {}); } catch (e) { ctx.log.error(e.code + ': ' + e.message); }` },
    ], [{ key: 'note', render: `() => ({ subject: 'Note', html: '', text: 'A note' })` }]);
    const run = async (email: string) => {
      const user = `u-${Math.random().toString(36).slice(2, 10)}`;
      const p = await consenting(s, fx, { userId: user, identifiers: { email } });
      await fire(s, fx, user, 'notify_go');
      const [x] = await untilExecutions(s, admin, { journey: 'notify', profileId: p.id }, (l) => l.length === 1 && ended(l[0]));
      return { x, d: (await execution(s, admin, x.id)).body.data };
    };
    const bad = await run('victim@example.com, attacker@evil.example');
    t.equal(bad.x.status, 'completed', bad.x.error);
    t.match(bad.d.journal[0].result, { ok: false, error: { code: 'validation_failed' } });
    t.match(bad.d.logs[0]?.message, /^validation_failed: the profile's e-mail address .* is not exactly one address/);
    t.same((await api(s, admin)('GET', `/v1/emails?executionId=${bad.x.id}`)).body.data, [], 'nothing in the outbox');
    // A later good send arrives; by then the refused one would have too.
    const good = await run('solo@example.com');
    const e = await settled(s, fx.org, good.d.journal[0].result.value.emailId);
    t.equal(e.status, 'sent');
    await poll(async () => smtp.mails.filter((m) => m.headers['message-id'] === e.messageId).length, (n) => n === 1, 5000, 50);
    const rcpts = smtp.mails.flatMap((m) => m.to);
    t.notOk(rcpts.some((r) => /victim@example\.com|attacker@evil\.example/.test(r)), 'no SMTP recipient from the refused identifier');
    t.ok(rcpts.includes('solo@example.com'), 'the single address was sent');
  });

  t.test('the runtime entry: idempotent on (org, key), html and text parts, pending then sent', async (t) => {
    const pool = poolOf(t, s);
    const org = await createOrg(s);
    const req = { orgId: org.org.id, key: 'exe_1:3', executionId: 'exe_1', template: 'welcome-email', to: 'ada@example.com', subject: 'Welcome, Ada', html: '<p>Hi <b>Ada</b></p>', text: 'Hi Ada' };
    const a = await enqueueEmail(pool, req);
    const b = await enqueueEmail(pool, { ...req, subject: 'changed' });
    t.equal(a.created, true);
    t.same(b, { id: a.id, created: false }, 'the second call answers the first row');
    await wakeAsAnotherProcess(s, org);
    const e = await settled(s, org, a.id);
    t.match(e, { status: 'sent', template: 'welcome-email', executionId: 'exe_1', subject: 'Welcome, Ada', html: '<p>Hi <b>Ada</b></p>', text: 'Hi Ada', attempts: 1 });
    t.ok(await markersArrived(s, org, smtp), 'a later e-mail arrived');
    const got = smtp.mails.filter((m) => m.headers['message-id'] === e.messageId);
    t.equal(got.length, 1, 'sent once');
    t.match(got[0]!.headers['content-type'], /multipart\/alternative/, 'text and html parts');
    t.ok(got[0]!.raw.includes('Hi Ada') && got[0]!.raw.includes('<b>Ada</b>'), 'both bodies');
    const l = await api(s, org.sessions.admin)('GET', '/v1/emails?executionId=exe_1');
    t.equal(l.body.data.length, 1, 'one row for the repeated key');
  });

  t.test('list newest first, cursor, filters; fetch; deploy key and member read', async (t) => {
    const pool = poolOf(t, s);
    const org = await createOrg(s);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await enqueueEmail(pool, {
        orgId: org.org.id, key: `k${i}`, executionId: i < 3 ? 'exe_a' : 'exe_b', template: 't', to: i % 2 ? 'odd@example.com' : 'even@example.com',
        subject: `n${i}`, html: '', text: `body ${i}`,
      })).id);
      await clockPast(new Date().toISOString()); // ids sort by time
    }
    const refused = await testSend(s, org, { to: 'refuse@example.com' });
    ids.push(refused.id);
    const failed = await settled(s, org, refused.id);
    t.equal(failed.status, 'failed', '550 is permanent');
    t.equal(failed.attempts, 1, 'not retried');
    t.match(failed.lastError, /550/);
    await poll(async () => (await api(s, org.sessions.admin)('GET', '/v1/emails?status=pending')).body.data.length, (n) => n === 0, 15_000, 50);

    const a = api(s, org.sessions.admin);
    const all = await a('GET', '/v1/emails');
    t.equal(all.status, 200);
    t.same(all.body.data.map((x: any) => x.id), [...ids].reverse(), 'newest first');
    const p1 = await a('GET', '/v1/emails?limit=4');
    t.same(p1.body.data.map((x: any) => x.id), [...ids].reverse().slice(0, 4));
    t.equal(p1.body.meta.hasMore, true);
    const p2 = await a('GET', `/v1/emails?limit=4&cursor=${p1.body.meta.nextCursor}`);
    t.same(p2.body.data.map((x: any) => x.id), [...ids].reverse().slice(4), 'second page');
    t.equal(p2.body.meta.hasMore, false);
    t.equal(p2.body.meta.nextCursor, null);
    t.same((await a('GET', '/v1/emails?status=failed')).body.data.map((x: any) => x.id), [refused.id], 'status filter');
    t.equal((await a('GET', '/v1/emails?status=sent')).body.data.length, 5);
    t.same((await a('GET', '/v1/emails?executionId=exe_b')).body.data.map((x: any) => x.id), [ids[4], ids[3]], 'executionId filter');
    t.same((await a('GET', '/v1/emails?to=ODD@example.com')).body.data.map((x: any) => x.id), [ids[3], ids[1]], 'to filter, case-insensitive');
    t.same((await a('GET', '/v1/emails?to=odd@example.com&executionId=exe_a&limit=1')).body.data.map((x: any) => x.id), [ids[1]], 'filters combine');
    const g = await a('GET', `/v1/emails/${ids[0]}`);
    t.equal(g.status, 200);
    t.same(g.body.data, all.body.data.at(-1), 'fetch answers the listed record');
    // Recipients and bodies are outside the deploy key's release lifecycle (issue 23 item 4).
    expectError(t, await api(s, org.deployKey)('GET', '/v1/emails?limit=1'), 403, 'deploy_key_scope', 'deploy key may not list');
    expectError(t, await api(s, org.deployKey)('GET', `/v1/emails/${ids[0]}`), 403, 'deploy_key_scope', 'deploy key may not fetch');
    const mem = await api(s, org.sessions.member)('GET', '/v1/emails');
    t.equal(mem.status, 200, 'members may read');
    t.equal(mem.body.data.length, 6);
  });

  t.test('receiver down: retried with lastError, sent once it is up', async (t) => {
    const org = await createOrg(s);
    await smtp.close();
    const e = await testSend(s, org, { to: 'later@example.com', subject: 'after the outage' });
    const tried = await poll(() => getEmail(s, org, e.id), (x) => x.attempts >= 2, 10_000, 50);
    t.equal(tried.status, 'pending', 'still pending while the receiver is down');
    t.ok(tried.attempts >= 2, `retried (${tried.attempts} attempts)`);
    t.match(tried.lastError, /ECONNREFUSED|ECONNECTION|connect/i, `lastError says why: ${tried.lastError}`);
    smtp = await startSmtp(port, (rcpt) => (rcpt.startsWith('refuse') ? 550 : undefined));
    const done = await settled(s, org, e.id, 20_000);
    t.equal(done.status, 'sent', JSON.stringify(done));
    t.ok(done.attempts >= 3);
    t.ok(await markersArrived(s, org, smtp), 'a later e-mail arrived');
    t.equal(smtp.mails.filter((m) => m.headers['message-id'] === done.messageId).length, 1, 'arrived exactly once');
  });

  t.test('a temporary refusal (451) is retried until the attempts run out', async (t) => {
    const org = await createOrg(s);
    smtp.refuse = (rcpt) => (rcpt.startsWith('busy') ? 451 : undefined);
    t.teardown(() => { smtp.refuse = () => undefined; });
    const e = await testSend(s, org, { to: 'busy@example.com' });
    const done = await settled(s, org, e.id, 30_000);
    t.equal(done.status, 'failed');
    t.equal(done.attempts, 4, 'all attempts made');
    t.match(done.lastError, /451/);
  });

  t.test('auth: 401 without a bearer or with the API key, member and deploy key cannot test-send', async (t) => {
    const org = await createOrg(s);
    const e = await testSend(s, org, { to: 'a@example.com' });
    const paths: Array<[string, string, unknown?]> = [['GET', '/v1/emails'], ['GET', `/v1/emails/${e.id}`], ['POST', '/v1/emails/test', { to: 'a@example.com' }]];
    for (const [m, p, data] of paths) {
      expectError(t, await call(s.url, m, p, { body: data === undefined ? undefined : { data } }), 401, 'invalid_key', `${m} ${p} without a bearer`);
      expectError(t, await api(s, org.apiKey)(m, p, data), 401, 'invalid_key', `${m} ${p} with the API key`);
    }
    expectError(t, await api(s, org.sessions.member)('POST', '/v1/emails/test', { to: 'a@example.com' }), 403, 'forbidden', 'member test send');
    expectError(t, await api(s, org.deployKey)('POST', '/v1/emails/test', { to: 'a@example.com' }), 403, 'deploy_key_scope', 'deploy key test send');
    const other = await createOrg(s);
    expectError(t, await api(s, other.sessions.admin)('GET', `/v1/emails/${e.id}`), 404, 'not_found', 'another org\'s e-mail');
    expectError(t, await api(s, other.deployKey)('GET', `/v1/emails/${e.id}`), 403, 'deploy_key_scope', 'another org\'s e-mail with its deploy key');
    t.same((await api(s, other.sessions.admin)('GET', '/v1/emails')).body.data, [], 'another org lists nothing');
    t.equal((await api(s, org.sessions.admin)('GET', '/v1/emails')).body.data.length, 1, 'only the admin send was recorded');
  });

  t.test('bad input gets 4xx envelopes', async (t) => {
    const org = await createOrg(s);
    const cases: Array<{ what: string; m: string; p: string; raw?: string; data?: unknown; status: number; code: string; names?: string }> = [
      { what: 'to missing', m: 'POST', p: '/v1/emails/test', data: {}, status: 422, code: 'validation_failed', names: '/data/to' },
      { what: 'to not an address', m: 'POST', p: '/v1/emails/test', data: { to: 'nobody' }, status: 422, code: 'validation_failed', names: '/data/to' },
      { what: 'to with a header break', m: 'POST', p: '/v1/emails/test', data: { to: 'a@example.com\r\nBcc: b@example.com' }, status: 422, code: 'validation_failed', names: '/data/to' },
      { what: 'to too long', m: 'POST', p: '/v1/emails/test', data: { to: `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(60)}.com` }, status: 422, code: 'validation_failed', names: '/data/to' },
      { what: 'to a number', m: 'POST', p: '/v1/emails/test', data: { to: 5 }, status: 422, code: 'validation_failed', names: '/data/to' },
      { what: 'to with NUL', m: 'POST', p: '/v1/emails/test', data: { to: 'a\u0000@example.com' }, status: 422, code: 'validation_failed', names: '/data/to' },
      { what: 'subject too long', m: 'POST', p: '/v1/emails/test', data: { to: 'a@example.com', subject: 'x'.repeat(201) }, status: 422, code: 'validation_failed', names: '/data/subject' },
      { what: 'subject with a line break', m: 'POST', p: '/v1/emails/test', data: { to: 'a@example.com', subject: 'a\r\nBcc: b@example.com' }, status: 422, code: 'validation_failed', names: '/data/subject' },
      { what: 'subject null', m: 'POST', p: '/v1/emails/test', data: { to: 'a@example.com', subject: null }, status: 422, code: 'validation_failed', names: '/data/subject' },
      { what: 'text too long', m: 'POST', p: '/v1/emails/test', data: { to: 'a@example.com', text: 'x'.repeat(10_001) }, status: 422, code: 'validation_failed', names: '/data/text' },
      { what: 'text an object', m: 'POST', p: '/v1/emails/test', data: { to: 'a@example.com', text: {} }, status: 422, code: 'validation_failed', names: '/data/text' },
      { what: 'data not an object', m: 'POST', p: '/v1/emails/test', data: 'a@example.com', status: 422, code: 'validation_failed' },
      { what: 'no data wrapper', m: 'POST', p: '/v1/emails/test', raw: '{"to":"a@example.com"}', status: 400, code: 'malformed_request' },
      { what: 'not JSON', m: 'POST', p: '/v1/emails/test', raw: '{"data":', status: 400, code: 'malformed_request' },
      { what: 'status unknown', m: 'GET', p: '/v1/emails?status=queued', status: 422, code: 'validation_failed', names: '/status' },
      { what: 'executionId empty', m: 'GET', p: '/v1/emails?executionId=', status: 422, code: 'validation_failed', names: '/executionId' },
      { what: 'executionId too long', m: 'GET', p: `/v1/emails?executionId=${'x'.repeat(201)}`, status: 422, code: 'validation_failed', names: '/executionId' },
      { what: 'to too long (filter)', m: 'GET', p: `/v1/emails?to=${'x'.repeat(201)}`, status: 422, code: 'validation_failed', names: '/to' },
      { what: 'to with NUL (filter)', m: 'GET', p: '/v1/emails?to=a%00b', status: 422, code: 'validation_failed', names: '/to' },
      { what: 'limit 0', m: 'GET', p: '/v1/emails?limit=0', status: 422, code: 'validation_failed', names: '/limit' },
      { what: 'limit 101', m: 'GET', p: '/v1/emails?limit=101', status: 422, code: 'validation_failed', names: '/limit' },
      { what: 'forged cursor', m: 'GET', p: '/v1/emails?cursor=abc', status: 422, code: 'validation_failed', names: '/cursor' },
      { what: 'cursor of the wrong shape', m: 'GET', p: `/v1/emails?cursor=${Buffer.from('[1,2]').toString('base64url')}`, status: 422, code: 'validation_failed', names: '/cursor' },
      { what: 'id with NUL', m: 'GET', p: '/v1/emails/eml%00x', status: 422, code: 'validation_failed', names: '/id' },
      { what: 'unknown id', m: 'GET', p: '/v1/emails/eml_nope', status: 404, code: 'not_found' },
    ];
    for (const c of cases) {
      const r = c.raw !== undefined
        ? await call(s.url, c.m, c.p, { token: org.sessions.admin, raw: c.raw, contentType: 'application/json' })
        : await api(s, org.sessions.admin)(c.m, c.p, c.data);
      expectError(t, r, c.status, c.code, c.what, c.names);
    }
    t.same((await api(s, org.sessions.admin)('GET', '/v1/emails')).body.data, [], 'nothing recorded');
  });

  t.test('an e-mail whose claim expired (its process died mid-send) is taken again; a live claim is not', async (t) => {
    const pool = poolOf(t, s);
    const org = await createOrg(s);
    // What a dead process leaves: rows claimed (leased) and never completed. Each is enqueued as
    // `stored` (never claimed), then made pending and leased in one statement: a transaction around
    // two statements does not keep the running sender out on embedded Postgres, whose one session
    // the test's connection shares with the service.
    const leased = async (key: string, to: string, lease: string) => {
      const r = await enqueueEmail(pool, { orgId: org.org.id, key, executionId: null, template: 't', to, subject: key, html: '', text: 'x' }, { transport: false });
      await pool.query(`UPDATE emails SET status = 'pending', next_attempt_at = now(), lease_until = now() + interval '${lease}', lease_token = 'dead' WHERE id = $1`, [r.id]);
      return r;
    };
    const live = await leased('live', 'a@example.com', '1 hour');
    const expired = await leased('expired', 'b@example.com', '-1 second');
    await wakeAsAnotherProcess(s, org);
    const e = await settled(s, org, expired.id);
    t.equal(e.status, 'sent', 'the expired claim was taken and sent');
    t.ok(await markersArrived(s, org, smtp), 'a later e-mail was claimed and sent');
    t.equal((await getEmail(s, org, live.id)).status, 'pending', 'a live claim of another process is left alone');
    t.notOk(smtp.counts().has(`<${live.id}@mail.example.com>`), 'and not sent');
    await pool.query(`UPDATE emails SET lease_until = now() - interval '1 second' WHERE id = $1`, [live.id]);
    await wakeAsAnotherProcess(s, org);
    t.equal((await settled(s, org, live.id)).status, 'sent', 'sent once its lease expired');
  });
});

t.test('e-mails pending at a stop, one of them cut mid-send, are sent exactly once by the next server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-email-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await deadPort();
  const flags = ['--data-dir', dir, '--smtp-url', `smtp://127.0.0.1:${port}`, '--email-attempts', '20', '--email-retry-base-ms', '200', '--email-poll-ms', '50'];
  const env = dbEnv(await ownDatabase(t));
  const s1 = await startServer(flags, env);
  const org = await createOrg(s1);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await testSend(s1, org, { to: `r${i}@example.com`, subject: `restart ${i}` })).id);
  const tried = await poll(async () => (await api(s1, org.sessions.admin)('GET', '/v1/emails')).body.data as any[],
    (l) => l.length === 5 && l.every((e) => e.attempts >= 1), 10_000, 50);
  t.ok(tried.every((e) => e.status === 'pending' && e.attempts >= 1 && e.lastError), 'tried while the receiver was down, still pending');
  // Now a server that takes the message and never answers: the next retry hangs mid-send.
  const hanging = await startSmtp(port);
  hanging.hang = true;
  await poll(async () => hanging.mails.length, (n) => n >= 1, 15_000, 20);
  t.ok(hanging.mails.length >= 1, 'a retry reached the hanging server');
  const attemptsBefore = new Map((await api(s1, org.sessions.admin)('GET', '/v1/emails')).body.data.map((e: any) => [e.id, e.attempts]));
  const started = Date.now();
  await s1.close();
  const took = Date.now() - started;
  t.ok(took < 10_000, `the stop did not wait for the hanging send (${took} ms)`);
  await hanging.close();

  const smtp = await startSmtp(port);
  t.teardown(() => smtp.close());
  const s2 = await startServer(flags, env);
  t.teardown(() => s2.close());
  const done = await poll(async () => (await api(s2, org.sessions.admin)('GET', '/v1/emails')).body.data as any[],
    (l) => l.length === 5 && l.every((e) => e.status === 'sent'), 30_000, 100);
  t.ok(done.every((e) => e.status === 'sent'), 'all sent after the restart');
  const cut = hanging.mails.map((m) => m.headers['message-id']);
  for (const e of done.filter((x) => cut.includes(x.messageId))) {
    t.equal(e.attempts, (attemptsBefore.get(e.id) as number) + 1, `${e.id}: the cut send counted no attempt`);
  }
  t.ok(await markersArrived(s2, org, smtp), 'a later e-mail arrived');
  const counts = smtp.counts();
  t.same(ids.map((id) => counts.get(`<${id}@localhost>`) ?? 0), ids.map(() => 1), 'every pending e-mail arrived exactly once, with its Message-ID');
  t.ok(cut.every((id) => ids.some((x) => `<${x}@localhost>` === id)), 'the cut attempts carried the same Message-IDs: a duplicate downstream is recognisable');
});

t.test('a server and a worker draining one database never send an e-mail twice', { skip: !(process.env.DATABASE_URL && process.env.NATS_URL) && 'needs DATABASE_URL and NATS_URL (embedded data belongs to one process)' }, async (t) => {
  // Slow acceptance keeps the claims of both senders overlapping.
  const smtp = await startSmtp();
  smtp.delayMs = 20;
  t.teardown(() => smtp.close());
  const flags = ['--smtp-url', smtp.url, '--email-attempts', '3', ...FAST];
  const env = dbEnv(await ownDatabase(t));
  const a = await startServer(flags, env);
  t.teardown(() => a.close());
  await startWorker(t, [...flags, '--email-from', 'worker@localhost'], env);
  const org = await createOrg(a);
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push((await testSend(a, org, { to: `w${i}@example.com` })).id);
  const done = await poll(async () => (await api(a, org.sessions.admin)('GET', '/v1/emails?limit=100')).body.data as any[],
    (l) => l.length === 40 && l.every((e) => e.status === 'sent'), 30_000, 100);
  t.equal(done.filter((e) => e.status === 'sent').length, 40, 'all sent');
  t.ok(done.every((e) => e.attempts === 1), 'one attempt each');
  // Several, so that both senders are likely to claim one of them.
  t.ok(await markersArrived(a, org, smtp, 6), 'later e-mails arrived');
  const counts = smtp.counts();
  t.same(ids.map((id) => counts.get(`<${id}@localhost>`) ?? 0), ids.map(() => 1), 'every e-mail arrived, each Message-ID exactly once');
  const byWorker = smtp.mails.filter((m) => m.from === 'worker@localhost').length;
  t.comment(`sent by the worker: ${byWorker}, by the server: ${smtp.mails.length - byWorker}`);
});
