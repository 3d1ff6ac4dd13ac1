// One org's e-mail backlog does not hold the SMTP slots: an org may hold at most half of a
// process's sending slots, and due e-mails are claimed round-robin across orgs. Org A queues 40
// test e-mails to a receiver that takes 300 ms per message, then org B queues one: B's arrives
// while most of A's still wait (first come, first served would send it after all of A's).
import t from 'tap';
import { call, createOrg, poll, startServer } from './helpers/server.js';
import { startSmtp } from './helpers/smtp.js';
import { dbEnv, ownDatabase } from './helpers/db.js';

const smtp = await startSmtp();
smtp.delayMs = 300;
t.teardown(() => smtp.close());
const s = await startServer(['--smtp-url', smtp.url, '--email-poll-ms', '100'], dbEnv(await ownDatabase(t)));
t.teardown(() => s.close());

t.test('another org\'s e-mail is sent while one org has a backlog', async (t) => {
  const [a, b] = [await createOrg(s), await createOrg(s)];
  const send = async (token: string, to: string) => {
    const r = await call(s.url, 'POST', '/v1/emails/test', { token, body: { data: { to } } });
    t.equal(r.status, 202, `queued for ${to}`);
  };
  for (let i = 0; i < 40; i++) await send(a.sessions.admin, `a${i}@a.example`);
  await send(b.sessions.admin, 'b@b.example');
  const rcpts = () => smtp.mails.flatMap((m) => m.to);
  await poll(async () => rcpts(), (l) => l.includes('b@b.example'), 30_000, 20);
  const list = rcpts();
  const at = list.indexOf('b@b.example');
  t.ok(at !== -1, 'org B\'s e-mail arrived');
  const aBefore = list.slice(0, at).filter((x) => x.endsWith('@a.example')).length;
  t.ok(aBefore <= 20, `it arrived after ${aBefore} of org A's 40, not after all of them`);
  await poll(async () => rcpts().filter((x) => x.endsWith('@a.example')).length, (n) => n === 40, 60_000, 100);
  t.equal(rcpts().filter((x) => x.endsWith('@a.example')).length, 40, 'org A\'s backlog is sent in full');
});
