// E-mail without a transport: e-mails are stored in the local outbox, listed and never sent, and a
// malformed SMTP_URL stops the start. No server here sends e-mail, so this file cannot take the
// pending e-mails of emails.test.ts when both run against one database.
import t from 'tap';
import pg from 'pg';
import { join } from 'node:path';
import { startServer, call, createOrg, type OrgCreds, type TestServer } from './helpers/server.js';
import { startSmtp } from './helpers/smtp.js';
import { enqueueEmail } from '../journeys/email/mod.js';

const api = (s: TestServer, token: string) => (method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token, body: data === undefined ? undefined : { data } });
const testSend = async (s: TestServer, org: OrgCreds, data: Record<string, unknown>) => {
  const r = await api(s, org.sessions.admin)('POST', '/v1/emails/test', data);
  if (r.status !== 202) throw new Error(`test send: ${r.status} ${r.text}`);
  return r.body.data;
};

t.test('without SMTP_URL e-mails are stored in the local outbox and never sent', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  // SMTP_URL from the environment of the test run (if any) must not reach this server.
  const s = await startServer(['--email-poll-ms', '50'], { SMTP_URL: '' });
  t.teardown(() => s.close());
  const pool = process.env.DATABASE_URL ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 })
    : new pg.Pool({ host: join(s.dataDir!, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 2 });
  t.teardown(() => pool.end());
  const org = await createOrg(s);
  const e = await testSend(s, org, { to: smtp.url.replace('smtp://', 'x@').replace(/:\d+$/, '') + '.example.com' });
  t.equal(e.status, 'stored');
  const j = await enqueueEmail(pool, { orgId: org.org.id, key: 'k', executionId: 'exe_s', template: 'welcome', to: 'b@example.com', subject: 's', html: '', text: 't' }, { transport: false });
  t.equal(j.created, true);
  // No wait: without a transport no sender runs, and 'stored' was decided when each row was written.
  const l = await api(s, org.sessions.admin)('GET', '/v1/emails?status=stored');
  t.same(l.body.data.map((x: any) => x.id), [j.id, e.id], 'both listed as stored');
  t.ok(l.body.data.every((x: any) => x.attempts === 0 && x.sentAt === null && x.messageId === null && x.lastError === null), 'never attempted');
  t.same((await api(s, org.sessions.admin)('GET', '/v1/emails?status=pending')).body.data, []);
  t.equal(smtp.mails.length, 0, 'nothing reached any SMTP server');
});

t.test('a malformed SMTP_URL stops the start without echoing it', async (t) => {
  for (const bad of ['mail.example.com', 'http://u:s3cret@mail.example.com/', 'smtp://']) {
    const err = await startServer(['--smtp-url', bad]).then(() => undefined, (e: Error) => e);
    t.ok(err, `${bad} refused`);
    t.match(err?.message, /SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/);
    t.notOk(err?.message.includes('s3cret'), 'the URL is not echoed');
  }
});

t.test('a From without an address stops the start', async (t) => {
  for (const bad of ['headwater', 'Name <nobody>', 'a@b c@d']) {
    const err = await startServer(['--email-from', bad]).then(() => undefined, (e: Error) => e);
    t.match(err?.message, /HEADWATER_EMAIL_FROM must be an address/, `${bad} refused`);
  }
  for (const good of ['a@example.com', 'Journeys <journeys@mail.example.com>']) {
    const { loadConfig } = await import('../api/config.js');
    t.equal(loadConfig(['--email-from', good], {}).emailFrom, good, `${good} accepted`);
  }
});
