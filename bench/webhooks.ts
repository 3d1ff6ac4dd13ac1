// Outbound webhook delivery rate: `node dist/bench/webhooks.js [--deliveries 4000] [--webhooks 8]
// [--dead 200] [--timeout-ms 5000]`, embedded by default, against PostgreSQL (and NATS) when
// DATABASE_URL (and NATS_URL) are set.
//
// A headwater service runs in this process; the receivers run in a child process (one that answers
// 200 at once, one that accepts connections and never answers). Two runs, each in a fresh org:
//   fast   N deliveries spread over W webhooks whose receiver answers at once
//   +dead  the same, plus one more webhook whose receiver never answers, with D deliveries due
//          first: each of its attempts holds a slot until the timeout
// Deliveries are written straight into the outbox, all due at one instant T0, so what is measured
// is the sender (claim, sign, POST, outcome write), not the enqueue. Rate = N / (last outcome - T0).
// CPU per delivery is this process's (service, and embedded PGlite's thread; not the receivers'),
// a figure that depends less on what else the machine runs than the rate does.
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

const N = Number(arg('--deliveries', '4000'));
const W = Number(arg('--webhooks', '8'));
const D = Number(arg('--dead', '200'));
const TIMEOUT = arg('--timeout-ms', '5000');

const RECEIVERS = `
import { createServer } from 'node:http';
const fast = createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200); res.end(); }); });
const hang = createServer((req) => { req.resume(); });
fast.keepAliveTimeout = 60000;
await new Promise((r) => fast.listen(0, '127.0.0.1', r));
await new Promise((r) => hang.listen(0, '127.0.0.1', r));
process.stdout.write(JSON.stringify({ fast: fast.address().port, hang: hang.address().port }) + '\\n');
`;

const startReceivers = async () => { const r = await spawnModule<{ fast: number; hang: number }>(RECEIVERS, 'receivers'); return { ports: r.info, stop: r.stop }; };

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'hw-bench-webhooks-'));
  const rcv = await startReceivers();
  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const config = loadConfig(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--operator-token', operatorToken,
    '--webhook-allow-private', '--webhook-timeout-ms', TIMEOUT, '--webhook-poll-ms', '100'],
  { ...process.env, HEADWATER_LOG_LEVEL: 'error', HEADWATER_STREAM_PREFIX: `b${randomBytes(5).toString('hex')}` });
  const svc = await startService(config, createLogger(config.logLevel));
  const pool = process.env.DATABASE_URL
    ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 })
    : new pg.Pool({ host: join(dir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
  const http = async (method: string, path: string, token: string, data: unknown) => {
    const r = await fetch(svc.url + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
    const body: any = await r.json();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(body)}`);
    return body.data;
  };

  const run = async (label: string, dead: boolean, n = N) => {
    const org = await http('POST', '/v1/orgs', operatorToken, { name: `bench-${label}` });
    const admin = org.sessions.admin;
    const fast: string[] = [];
    for (let i = 0; i < W; i++) fast.push((await http('POST', '/v1/webhooks', admin, { name: `fast-${i}`, config: { url: `http://127.0.0.1:${rcv.ports.fast}/in` } })).id);
    const slow = dead ? (await http('POST', '/v1/webhooks', admin, { name: 'dead', config: { url: `http://127.0.0.1:${rcv.ports.hang}/in` } })).id : undefined;
    const t0 = new Date(Date.now() + 2000);
    const tag = randomBytes(4).toString('hex');
    const insert = (hooks: string[], n: number, due: Date, p: string) => pool.query(
      `INSERT INTO webhook_deliveries (id, org_id, webhook_id, type, body, status, next_attempt_at, created_at, updated_at)
       SELECT 'msg_b' || $5 || lpad(g::text, 7, '0'), $1, ($2::text[])[1 + g % array_length($2::text[], 1)], 'webhook.test',
              json_build_object('v', 1, 'id', 'msg_b' || $5 || lpad(g::text, 7, '0'), 'type', 'webhook.test', 'timestamp', now(), 'data', json_build_object('i', g))::text,
              'pending', $3::timestamptz, now(), now()
       FROM generate_series(1, $4::int) AS g`, [org.org.id, hooks, due.toISOString(), n, p + tag]);
    // The dead webhook's deliveries are due a moment earlier: they are claimed first.
    if (slow) await insert([slow], D, new Date(t0.getTime() - 100), 'd');
    await insert(fast, n, t0, 'f');
    while (Date.now() < t0.getTime()) await new Promise((r) => setTimeout(r, 5));
    const cpu0 = process.cpuUsage();
    for (;;) {
      const r = await pool.query(`SELECT count(*) FILTER (WHERE status <> 'pending') AS done, max(updated_at) AS last FROM webhook_deliveries WHERE webhook_id = ANY($1)`, [fast]);
      if (Number(r.rows[0].done) >= n) {
        const seconds = (new Date(r.rows[0].last).getTime() - t0.getTime()) / 1000;
        const cpu = process.cpuUsage(cpu0);
        const cpuMsPerDelivery = (cpu.user + cpu.system) / 1000 / n;
        const ok = await pool.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ANY($1) AND status = 'succeeded'`, [fast]);
        const deadState = slow ? (await pool.query(`SELECT status, count(*) AS n, sum(attempts) AS attempts FROM webhook_deliveries WHERE webhook_id = $1 GROUP BY status`, [slow])).rows : [];
        return { label, deliveries: n, succeeded: Number(ok.rows[0].n), seconds, perSecond: Math.round(n / seconds), cpuMsPerDelivery, dead: deadState.map((x) => `${x.status}:${x.n} (attempts ${x.attempts})`).join(' ') };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  try {
    const mode = process.env.DATABASE_URL ? 'postgres' : 'embedded';
    await run('warm-up', false, Math.min(N, 500));
    const results = [await run('fast', false), await run('fast+dead', true)];
    console.log(JSON.stringify({ mode, webhooks: W, timeoutMs: Number(TIMEOUT), concurrency: config.webhookConcurrency, perWebhook: config.webhookConcurrencyPerWebhook }));
    for (const r of results) console.log(`${mode.padEnd(9)} ${r.label.padEnd(10)} ${String(r.deliveries).padStart(6)} deliveries  ${r.seconds.toFixed(2).padStart(7)} s  ${String(r.perSecond).padStart(6)}/s  succeeded ${r.succeeded}  cpu ${r.cpuMsPerDelivery.toFixed(2)} ms/delivery${r.dead ? `  dead webhook: ${r.dead}` : ''}`);
  } finally {
    await pool.end();
    await svc.close();
    rcv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => { console.error(err instanceof Error ? err.message : err); process.exit(1); });
