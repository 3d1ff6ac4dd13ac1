// Segment-compatible ingestion against headwater's own batch route: events/s through
// `/segment/v1/batch` with analytics-node-shaped batches of 15 track calls (write key as Basic
// auth), beside `/v1/batch` with the same 15 calls (API key), on one headwater process started
// here. Runs alternate A B A B so drift on a shared machine hits both. Every call has a new
// messageId; userIds cycle over 1,000 users, so most calls hit existing profiles.
//   node dist/bench/segment.js [--seconds 10] [--warmup 3] [--connections 16] [--rounds 2]
// DATABASE_URL / NATS_URL / CLICKHOUSE_URL, when set, are passed to the server.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { arg } from './args.js';

const seconds = Number(arg('--seconds', '10'));
const warmup = Number(arg('--warmup', '3'));
const connections = Number(arg('--connections', '16'));
const rounds = Number(arg('--rounds', '2'));
const CALLS = 15;
const USERS = 1000;

const moduleName = 'autocannon'; // no type declarations are installed: load it untyped
const autocannon = ((await import(moduleName)) as { default: any }).default;

const BIN = fileURLToPath(new URL('../../bin/headwater.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'hw-bench-seg-'));
const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;

function serve(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], {
    env: { ...process.env, HEADWATER_OPERATOR_TOKEN: operatorToken, HEADWATER_LOG_LEVEL: 'warn', HEADWATER_STREAM_PREFIX: `bs${process.pid}` },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (b) => {
      out += b;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}

async function post(url: string, token: string, body: unknown) {
  const r = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status >= 300) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return (await r.json() as any).data;
}

const srv = await serve();
try {
  const org = await post(`${srv.url}/v1/orgs`, operatorToken, { data: { name: `bench-${randomBytes(4).toString('hex')}` } });
  const app = await post(`${srv.url}/v1/apps`, org.sessions.admin, { data: { name: 'bench' } });
  const sources = await (await fetch(`${srv.url}/v1/apps/${app.id}/sources`, { headers: { authorization: `Bearer ${org.sessions.admin}` } })).json() as any;
  const sourceId = sources.data[0].id as string;
  const key = await post(`${srv.url}/v1/sources/${sourceId}/write-keys`, org.sessions.admin, { data: {} });

  // One body factory per route; `run` keeps messageIds unique across runs.
  const bodies = (route: 'segment' | 'native', run: string) => {
    let n = 0;
    return () => {
      const calls: string[] = [];
      for (let i = 0; i < CALLS; i++) {
        n++;
        const user = `bench-u${(n * 7919) % USERS}`;
        const ts = new Date().toISOString();
        calls.push(route === 'segment'
          ? `{"type":"track","userId":"${user}","event":"Page Viewed","properties":{"path":"/pricing","plan":"pro","n":${n}},` +
            `"messageId":"${run}-${n}","timestamp":"${ts}","context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"}},` +
            `"integrations":{},"_metadata":{"jsRuntime":"node"}}`
          : `{"type":"track","identifiers":{"userId":"${user}"},"event":"Page Viewed","properties":{"path":"/pricing","plan":"pro","n":${n}},` +
            `"messageId":"${run}-${n}","timestamp":"${ts}"}`);
      }
      return route === 'segment'
        ? `{"batch":[${calls.join(',')}],"writeKey":"${key.writeKey}","sentAt":"${new Date().toISOString()}"}`
        : `{"data":{"sourceId":"${sourceId}","calls":[${calls.join(',')}]}}`;
    };
  };

  const load = (route: 'segment' | 'native', durationS: number) => new Promise<any>((resolve, reject) => {
    const next = bodies(route, `${route}-${randomBytes(4).toString('hex')}`);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    headers.authorization = route === 'segment' ? `Basic ${Buffer.from(`${key.writeKey}:`).toString('base64')}` : `Bearer ${org.apiKey}`;
    autocannon({
      url: srv.url + (route === 'segment' ? '/segment/v1/batch' : '/v1/batch'), connections, duration: durationS, method: 'POST', headers,
      requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, method: 'POST', body: next() }) }],
    }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res)));
  });

  const results: Record<string, number[]> = { segment: [], native: [] };
  for (let r = 0; r < rounds; r++) {
    for (const route of ['native', 'segment'] as const) {
      await load(route, warmup);
      const res = await load(route, seconds);
      const eps = (res['2xx'] * CALLS) / res.duration;
      results[route]!.push(eps);
      process.stdout.write(`${route.padEnd(7)} round ${r + 1}: ${eps.toFixed(0)} events/s (${(res['2xx'] / res.duration).toFixed(0)} req/s, ${res.non2xx} non-2xx, p50 ${res.latency.p50} ms, p99 ${res.latency.p99} ms)\n`);
    }
  }
  const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2; };
  const seg = median(results.segment!);
  const nat = median(results.native!);
  process.stdout.write(`median: /segment/v1/batch ${seg.toFixed(0)} events/s, /v1/batch ${nat.toFixed(0)} events/s, ratio ${(seg / nat).toFixed(3)}\n`);
} finally {
  srv.child.kill('SIGTERM');
  await new Promise((r) => srv.child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
