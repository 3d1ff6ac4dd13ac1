// The bench harness's processes: servers started as children on free ports and stopped (killed
// when they do not stop), the private NATS server, HTTP helpers, and headwater's fixture and drain.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { loadgenChildren } from './load.js';
import { serverNodeArgs } from './run-args.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url)); // dist/bench/ -> project root
export const BENCH_DIST = fileURLToPath(new URL('./', import.meta.url));
export const servers = new Set<ChildProcess>();

export interface Server { name: string; child: ChildProcess; pid: number; url: string; stderrTail: () => string }

export function startChild(name: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    servers.add(child);
    let out = '';
    let err = '';
    let settled = false;
    const tail = () => err.slice(-2000);
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killChild(child, 'SIGKILL');
      reject(new Error(`${name}: ${why}\n${tail()}`));
    };
    const timer = setTimeout(() => fail(`not listening after ${timeoutMs / 1000} s`), timeoutMs);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.length > 20_000) out = out.slice(-10_000);
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m && !settled) {
        settled = true;
        clearTimeout(timer);
        resolve({ name, child, pid: child.pid!, url: m[1]!.replace(/\/$/, ''), stderrTail: tail });
      }
    });
    child.stderr!.on('data', (c: Buffer) => { err += c.toString(); if (err.length > 50_000) err = err.slice(-20_000); });
    child.on('error', (e) => fail(`spawn failed: ${e.message}`));
    child.on('exit', (code, sig) => { servers.delete(child); fail(`exited early (code ${code}, signal ${sig})`); });
  });
}

/** This process's environment without what names a store or an address: each server is given its own. */
export function serverEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['DATABASE_URL', 'NATS_URL', 'CLICKHOUSE_URL', 'PORT', 'HOST', 'HEADWATER_DATA_DIR']) delete env[k];
  return env;
}

/**
 * `headwater serve` on a free port with `dataDir` and an operator token of its own, with
 * HEADWATER_BENCH_NODE_ARGS: resolves once it listens.
 */
export async function startHeadwater(name: string, env: NodeJS.ProcessEnv, dataDir: string): Promise<{ srv: Server; operatorToken: string }> {
  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const srv = await startChild(name, [...serverNodeArgs(), join(ROOT, 'bin', 'headwater.js'), 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir],
    { ...env, HEADWATER_OPERATOR_TOKEN: operatorToken }, 180_000);
  return { srv, operatorToken };
}

export function killChild(child: ChildProcess, sig: NodeJS.Signals) {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try { process.kill(-child.pid, sig); } catch { try { child.kill(sig); } catch { /* gone */ } }
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export async function stopServer(s: Server, graceMs = 15_000): Promise<void> {
  const c = s.child;
  if (c.exitCode !== null || c.signalCode !== null) { servers.delete(c); return; }
  const exited = new Promise<void>((r) => c.once('exit', () => r()));
  const t0 = Date.now();
  let killed = false;
  killChild(c, 'SIGTERM');
  const timer = setTimeout(() => { killed = true; killChild(c, 'SIGKILL'); }, graceMs);
  await exited;
  clearTimeout(timer);
  servers.delete(c);
  const msg = killed ? `did not exit within ${graceMs / 1000} s of SIGTERM; killed` : `stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`;
  process.stdout.write(`${s.name}: ${msg}\n`);
  stopNotes.push({ server: s.name, killed, note: msg });
}
export const stopNotes: Array<{ server: string; killed: boolean; note: string }> = [];

export function killAllSync() {
  for (const c of servers) killChild(c, 'SIGKILL');
  for (const c of loadgenChildren) killChild(c, 'SIGKILL');
}
process.on('exit', killAllSync);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => { process.stderr.write(`\nbench: ${sig}, stopping children\n`); killAllSync(); process.exit(130); });
}


// ---------------------------------------------------------------- small helpers

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const hex = (n: number) => randomBytes(n).toString('hex');

export function reachable(host: string, port: number, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host, port });
    const done = (ok: boolean) => { s.destroy(); resolve(ok); };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

// A connection per request, closed after it (no keep-alive pool): the harness's own sockets must
// not be counted as the server's open handles when they are sampled after the drain.
export function http(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  if (payload !== undefined) { headers['content-type'] = 'application/json'; headers['content-length'] = String(Buffer.byteLength(payload)); }
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method, headers, agent: false, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any;
        try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
        resolve({ status: res.statusCode ?? 0, body: parsed, text });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

// ---------------------------------------------------------------- NATS

export const natsWarnings: string[] = [];

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createNetServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => { const a = srv.address() as AddressInfo; srv.close(() => resolve(a.port)); });
  });
}

/** A nats-server of our own (JetStream, store in the bench's temp dir), killed with the other children. */
export async function startPrivateNats(tmp: string): Promise<{ url: string; child: ChildProcess }> {
  const bin = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => existsSync(p));
  if (!bin) throw new Error('nats-server binary not found');
  const port = await freePort();
  const dir = mkdtempSync(join(tmp, 'nats-'));
  const child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore', detached: true });
  servers.add(child);
  child.on('exit', () => servers.delete(child));
  for (let i = 0; i < 100; i++) {
    if (await reachable('127.0.0.1', port, 200)) { await sleep(300); return { url: `nats://127.0.0.1:${port}`, child }; }
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  killChild(child, 'SIGKILL');
  throw new Error('private nats-server did not start');
}

/** Describes other processes pulling from headwater's shared JetStream consumers, or undefined. */
export async function sharedStreamPullers(url: string): Promise<string | undefined> {
  let nc: NatsConnection | undefined;
  try {
    nc = await natsConnect({ servers: url, timeout: 3000 });
    const jsm = await jetstreamManager(nc, { timeout: 3000 });
    const found: string[] = [];
    for (const [stream, consumer] of [['HEADWATER_INGEST', 'hw-ingest-workers'], ['HEADWATER_EVENTS', 'hw-event-writers']] as const) {
      const ci = await jsm.consumers.info(stream, consumer).catch(() => undefined);
      if (ci && (ci.num_waiting > 0 || ci.num_ack_pending > 0)) found.push(`${consumer}: ${ci.num_waiting} pull requests waiting, ${ci.num_ack_pending} unacknowledged`);
    }
    return found.length ? `other processes are attached to headwater's shared JetStream consumers (${found.join('; ')})` : undefined;
  } catch { return undefined; } finally { await nc?.close().catch(() => {}); }
}

// ---------------------------------------------------------------- headwater

export interface Fixture { apiKey: string; admin: string; sourceId: string; orgId: string; appId: string; frontEnd: string }

export async function headwaterFixture(url: string, operatorToken: string): Promise<Fixture> {
  const org = await http(url, 'POST', '/v1/orgs', operatorToken, { data: { name: `bench-${hex(4)}` } });
  if (org.status !== 201) throw new Error(`org create: ${org.status} ${org.text.slice(0, 300)}`);
  const { apiKey, sessions, org: o } = org.body.data;
  // The default per-key limit (50k/s) must not be what is measured: raise it (operator setting).
  const lim = await http(url, 'PATCH', `/v1/orgs/${o.id}`, operatorToken, { data: { limits: { ratePerSecond: 10_000_000, burst: 10_000_000 } } });
  if (lim.status !== 200) throw new Error(`org limits: ${lim.status} ${lim.text.slice(0, 300)}`);
  const app = await http(url, 'POST', '/v1/apps', sessions.admin, { data: { name: `bench-app-${hex(3)}` } });
  if (app.status !== 201) throw new Error(`app create: ${app.status} ${app.text.slice(0, 300)}`);
  const srcs = await http(url, 'GET', `/v1/apps/${app.body.data.id}/sources`, sessions.admin);
  if (srcs.status !== 200 || !srcs.body?.data?.[0]?.id) throw new Error(`app sources: ${srcs.status} ${srcs.text.slice(0, 300)}`);
  // uws or node:http: the fallback front end answers the same but slower, so every figure names it.
  const ready = await http(url, 'GET', '/health/ready');
  const frontEnd = String(ready.body?.data?.frontEnd ?? `unknown (/health/ready ${ready.status})`);
  return { apiKey, admin: sessions.admin, sourceId: srcs.body.data[0].id, orgId: o.id, appId: app.body.data.id, frontEnd };
}

/**
 * After a run: one sentinel track call (answered after its worker, like every call), then poll
 * GET /v1/events until it is listed (landed in the event store). Answers the drain time in seconds
 * from the end of the load, or undefined when it did not show within the bound.
 */
export async function drain(url: string, f: Fixture, loadEndedAt: number, boundMs = 120_000): Promise<{ drainS?: number; sentinel: string }> {
  const messageId = `sentinel-${hex(6)}`;
  let r: { status: number; text: string };
  try {
    r = await http(url, 'POST', '/v1/track', f.apiKey, {
      data: { sourceId: f.sourceId, identifiers: { userId: 'bench-u0' }, event: 'Bench Sentinel', properties: {}, messageId },
    });
  } catch (err) { return { sentinel: `sentinel track call: ${(err as Error).message}` }; }
  if (r.status !== 201) return { sentinel: `sentinel track call answered ${r.status} ${r.text.slice(0, 160)}` };
  const until = Date.now() + boundMs;
  while (Date.now() < until) {
    const ev = await http(url, 'GET', `/v1/events?limit=1&event=${encodeURIComponent('Bench Sentinel')}`, f.admin).catch(() => undefined);
    if (ev?.status === 200 && ev.body?.data?.[0]?.messageId === messageId) {
      const latest = await http(url, 'GET', '/v1/events?limit=1', f.admin).catch(() => undefined);
      if (latest?.status === 200 && latest.body?.data?.length === 1) return { drainS: (Date.now() - loadEndedAt) / 1000, sentinel: 'listed' };
    }
    await sleep(50);
  }
  return { sentinel: `sentinel answered 201 but not listed in GET /v1/events within ${boundMs / 1000} s` };
}
