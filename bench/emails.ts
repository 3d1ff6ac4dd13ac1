// E-mail sending rate: `node dist/bench/emails.js [--emails 2000]`, embedded by default, against
// PostgreSQL (and NATS) when DATABASE_URL (and NATS_URL) are set. Run from the repository root.
//
// A headwater service runs in this process; a real SMTP receiver (`smtp-server`, accepting at once)
// runs in a child process. E-mails are written straight into the outbox, all due at one instant T0,
// so what is measured is the sender (claim, SMTP exchange over pooled connections, outcome write),
// not the enqueue. Rate = N / (last outcome - T0). CPU per e-mail is this process's (service and
// embedded PGlite's thread; not the receiver's).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { arg } from './args.js';
import { spawnModule } from './child.js';
import { loadConfig } from '../api/config.js';
import { createLogger } from '../lib/log.js';
import { startService } from '../api/service.js';

const N = Number(arg('--emails', '2000'));

const RECEIVER = `
import { SMTPServer } from 'smtp-server';
let n = 0;
const s = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
  onData(stream, _session, cb) { stream.resume(); stream.on('end', () => { n++; cb(); }); } });
await new Promise((r) => s.listen(0, '127.0.0.1', r));
process.stdout.write(JSON.stringify({ port: s.server.address().port }) + '\\n');
`;

const startReceiver = async () => { const r = await spawnModule<{ port: number }>(RECEIVER, 'receiver'); return { port: r.info.port, stop: r.stop }; };

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'hw-bench-emails-'));
  const rcv = await startReceiver();
  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const config = loadConfig(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--operator-token', operatorToken,
    '--smtp-url', `smtp://127.0.0.1:${rcv.port}`, '--email-poll-ms', '100'],
  { ...process.env, HEADWATER_LOG_LEVEL: 'error', HEADWATER_STREAM_PREFIX: `b${randomBytes(5).toString('hex')}` });
  const svc = await startService(config, createLogger(config.logLevel));
  const pool = process.env.DATABASE_URL
    ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 })
    : new pg.Pool({ host: join(dir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
  const r = await fetch(svc.url + '/v1/orgs', { method: 'POST', headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ data: { name: 'bench-emails' } }) });
  const org: any = ((await r.json()) as any).data;

  const run = async (label: string, n: number) => {
    const t0 = new Date(Date.now() + 2000);
    const tag = randomBytes(4).toString('hex');
    await pool.query(
      `INSERT INTO emails (id, org_id, key, template, to_address, subject, html, text, status, next_attempt_at)
       SELECT 'eml_b' || $3 || lpad(g::text, 7, '0'), $1, $3 || g, 'bench', 'user' || g || '@example.com', 'Hello ' || g,
              '<p>Hello <b>' || g || '</b></p>', 'Hello ' || g, 'pending', $2::timestamptz
       FROM generate_series(1, $4::int) AS g`, [org.org.id, t0.toISOString(), tag, n]);
    while (Date.now() < t0.getTime()) await new Promise((res) => setTimeout(res, 5));
    const cpu0 = process.cpuUsage();
    for (;;) {
      const q = await pool.query(`SELECT count(*) FILTER (WHERE status <> 'pending') AS done, count(*) FILTER (WHERE status = 'sent') AS sent, max(updated_at) AS last FROM emails WHERE key LIKE $1 || '%' AND org_id = $2`, [tag, org.org.id]);
      if (Number(q.rows[0].done) >= n) {
        const seconds = (new Date(q.rows[0].last).getTime() - t0.getTime()) / 1000;
        const cpu = process.cpuUsage(cpu0);
        return { label, n, sent: Number(q.rows[0].sent), seconds, perSecond: Math.round(n / seconds), cpuMs: (cpu.user + cpu.system) / 1000 / n };
      }
      await new Promise((res) => setTimeout(res, 50));
    }
  };

  try {
    const mode = process.env.DATABASE_URL ? 'postgres' : 'embedded';
    await run('warm-up', Math.min(N, 200));
    const x = await run('drain', N);
    console.log(`${mode.padEnd(9)} ${String(x.n).padStart(6)} e-mails  ${x.seconds.toFixed(2).padStart(7)} s  ${String(x.perSecond).padStart(5)}/s  sent ${x.sent}  cpu ${x.cpuMs.toFixed(2)} ms/e-mail`);
  } finally {
    await pool.end();
    await svc.close();
    rcv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => { console.error(err instanceof Error ? err.message : err); process.exit(1); });
