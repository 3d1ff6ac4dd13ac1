// The benchmark harness (`npm run bench`, `npm run bench -- --quick`, `npm run bench -- --soak`).
//
// In one run, on this machine, with the same load-generator settings for every server:
//   raw-uws     bench/raw-uws.ts: uWS parsing the JSON and answering 201 (the ceiling)
//   fastify-pg  bench/fastify-pg.ts: Fastify + pg, one INSERT per request (what a user would write)
//   floor-*     bench/floor.ts: uWS + one batched messageId/event insert per batch, answered after the
//               commit, on PGlite, on the Postgres server, and on the Postgres server behind
//               headwater's JetStream transport: the least the contract allows (the floor)
//   headwater   `node bin/headwater.js serve`, embedded, and with DATABASE_URL + NATS_URL when
//               those servers answer (each mode skipped with a printed reason otherwise)
// Each server is its own child process on a free port, alone on the machine while it is measured;
// the load generator (wrk with a generated Lua script, else autocannon) is another process.
// Scenarios: track calls (unique messageId, userId among a small set) on every server, and
// identify-heavy load (a new anonymousId per call: every call creates a profile) on headwater.
// Prints a table, the ratios, PASS/FAIL per target, and writes bench/results/latest.json.
//
// Batch scenarios (issue 22): SDK-shaped `POST /v1/batch` load, 20 calls per request, on each
// headwater mode and on fastify-pg-batch (bench/fastify-pg-batch.ts: Fastify + pg, one transaction
// per request, a multi-row event INSERT ... ON CONFLICT DO NOTHING and a multi-row profile upsert):
//   batch20-users1000  track calls, userId among --users (1,000)
//   batch20-newusers   track calls, a new userId per call (every call creates a profile)
//   batch20-replay     the bodies of batch20-users1000's measured run again: every messageId stored
//   batch20-mix        1 identify per 4 track calls, userId among --users
// Reported per scenario: calls/s (per-call 2xx statuses in the 200 answers), CPU us per call of the
// server, Postgres (backends of the bench's databases + shared background processes) and NATS,
// p50/p99, requests over 1 s and 2 s, the ratio to the baseline; PASS/FAIL per target; the figures
// go to bench/results/latest.json and bench/results/batch.md.
// --batch runs the batch scenarios alone (with --only fastify,embedded,nats); --no-batch leaves
// them out of a full run.
//
// --journeys runs bench/executions.ts (the journey runtime) instead of all this.
// Flags: --quick (10 s per scenario after a 3 s warm-up), --soak (adds a 5-minute track run per
// headwater mode, RSS sampled every 10 s), --only raw,fastify,floor,embedded,nats, --connections N,
// --threads N (wrk threads), --duration S, --warmup S, --soak-seconds S, --soak-warmup S, --users N,
// --loadgen wrk|autocannon, --private-nats (NATS mode against a nats-server started for the run instead of
// NATS_URL: headwater's stream names are fixed, so other headwater processes on a shared NATS server pull
// the bench's calls), --segments (adds, per headwater mode, track load in an org with 50 segments, and
// in Postgres mode the time to create a segment over 100,000 existing profiles).
// HEADWATER_BENCH_NODE_ARGS passes Node flags to the headwater servers alone (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { findWrk, loadgenChildren, runLoad, type BatchShape, type CallKind, type LoadResult, type LoadSettings, type LoadTarget } from './load.js';
import { defineSegments, segmentCreateBench, type CreateBench } from './segments.js';
import { cpuBetween, cpuOfNamed, cpuOfPids, cpuOfPostgres, cpuSeconds, fdKinds, machineTicks, memory, openFds, threadBreakdown, threadCpu } from './procstat.js';

// ---------------------------------------------------------------- options

interface Options {
  quick: boolean; soak: boolean; privateNats: boolean; segments: boolean; only?: Set<string>;
  connections: number; threads: number; durationS: number; warmupS: number; soakS: number; soakWarmupS: number;
  loadgen: 'wrk' | 'autocannon'; users: number;
  /** Batch scenarios: 'only' (--batch), 'also' (default), 'off' (--no-batch). */
  batch: 'only' | 'also' | 'off';
}

function parseArgs(argv: string[]): Options {
  const has = (f: string) => argv.includes(f);
  const val = (f: string) => { const i = argv.indexOf(f); return i !== -1 ? argv[i + 1] : undefined; };
  const num = (f: string, d: number) => { const v = val(f); if (v === undefined) return d; const n = Number(v); if (!Number.isFinite(n) || n <= 0) throw new Error(`${f} needs a positive number`); return n; };
  const quick = has('--quick');
  const only = val('--only');
  const lg = val('--loadgen');
  if (lg !== undefined && lg !== 'wrk' && lg !== 'autocannon') throw new Error('--loadgen is wrk or autocannon');
  return {
    quick, soak: has('--soak'), privateNats: has('--private-nats'), segments: has('--segments'),
    only: only ? new Set(only.split(',').map((s) => s.trim())) : undefined,
    connections: num('--connections', 64),
    threads: num('--threads', 2),
    durationS: num('--duration', quick ? 10 : 30),
    warmupS: num('--warmup', quick ? 3 : 5),
    soakS: num('--soak-seconds', 300),
    soakWarmupS: num('--soak-warmup', 30),
    loadgen: (lg as 'wrk' | 'autocannon' | undefined) ?? (findWrk() ? 'wrk' : 'autocannon'),
    users: num('--users', 1000),
    batch: has('--batch') ? 'only' : has('--no-batch') ? 'off' : 'also',
  };
}

// ---------------------------------------------------------------- child processes

/** Node flags for the headwater servers only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`), from HEADWATER_BENCH_NODE_ARGS. */
const serverNodeArgs = () => (process.env.HEADWATER_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

const ROOT = fileURLToPath(new URL('../../', import.meta.url)); // dist/bench/ -> project root
const BENCH_DIST = fileURLToPath(new URL('./', import.meta.url));
const servers = new Set<ChildProcess>();

interface Server { name: string; child: ChildProcess; pid: number; url: string; stderrTail: () => string }

function startChild(name: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Server> {
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

function killChild(child: ChildProcess, sig: NodeJS.Signals) {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try { process.kill(-child.pid, sig); } catch { try { child.kill(sig); } catch { /* gone */ } }
}

/** SIGTERM, then SIGKILL after `graceMs`. */
async function stopServer(s: Server, graceMs = 15_000): Promise<void> {
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
const stopNotes: Array<{ server: string; killed: boolean; note: string }> = [];

function killAllSync() {
  for (const c of servers) killChild(c, 'SIGKILL');
  for (const c of loadgenChildren) killChild(c, 'SIGKILL');
}
process.on('exit', killAllSync);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => { process.stderr.write(`\nbench: ${sig}, stopping children\n`); killAllSync(); process.exit(130); });
}

// ---------------------------------------------------------------- small helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const hex = (n: number) => randomBytes(n).toString('hex');

function reachable(host: string, port: number, timeoutMs = 2000): Promise<boolean> {
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
function http(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
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

const natsWarnings: string[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createNetServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => { const a = srv.address() as AddressInfo; srv.close(() => resolve(a.port)); });
  });
}

/** A nats-server of our own (JetStream, store in the bench's temp dir), killed with the other children. */
async function startPrivateNats(tmp: string): Promise<{ url: string; child: ChildProcess }> {
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
async function sharedStreamPullers(url: string): Promise<string | undefined> {
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

interface Fixture { apiKey: string; admin: string; sourceId: string; orgId: string; appId: string; frontEnd: string }

async function headwaterFixture(url: string, operatorToken: string): Promise<Fixture> {
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
async function drain(url: string, f: Fixture, loadEndedAt: number, boundMs = 120_000): Promise<{ drainS?: number; sentinel: string }> {
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

// ---------------------------------------------------------------- scenarios

const BATCH_SCENARIOS = ['batch20-users1000', 'batch20-newusers', 'batch20-replay', 'batch20-mix'] as const;
type BatchScenario = typeof BATCH_SCENARIOS[number];
type Scenario = Exclude<CallKind, 'batch'> | 'soak' | 'segments' | BatchScenario;
const isBatch = (s: string): s is BatchScenario => (BATCH_SCENARIOS as readonly string[]).includes(s);
const BATCH_SIZE = 20;

/** The bodies of a batch scenario; the replay needs the run it replays (runId, batches stored per thread). */
function batchShape(s: BatchScenario, replayOf?: { runId: string; batches: number }): BatchShape | undefined {
  switch (s) {
    case 'batch20-users1000': return { size: BATCH_SIZE, users: 'pool' };
    case 'batch20-newusers': return { size: BATCH_SIZE, users: 'new' };
    case 'batch20-mix': return { size: BATCH_SIZE, users: 'pool', identifyEvery: 5 };
    case 'batch20-replay': return replayOf ? { size: BATCH_SIZE, users: 'pool', replay: replayOf } : undefined;
  }
}

/**
 * What a replay of `r` (a batch20-users1000 run) may re-send: its runId and, per wrk thread, the
 * batches surely answered (the fewest answers of a thread, less one in flight per connection, less
 * 10 %), so every re-sent messageId is stored. Undefined when too little was answered.
 */
function replaySource(r: ScenarioResult, s: LoadSettings): { runId: string; batches: number } | undefined {
  const per = r.load.perThread;
  if (!r.runId || !per?.length) return undefined;
  const batches = Math.floor(Math.min(...per) * 0.9) - Math.ceil(s.connections / Math.max(1, s.threads));
  return batches >= 1 ? { runId: r.runId, batches } : undefined;
}

/** Which store servers a scenario's CPU per call counts (Postgres / NATS of this run). */
interface Uses { pg: boolean; nats: boolean }
/** Databases whose Postgres backends are the bench's (see cpuOfPostgres); the NATS server's pid when private. */
const pgDatabases: string[] = [];
let natsPids: number[] | undefined;
const natsCpu = () => (natsPids ? cpuOfPids(natsPids) : cpuOfNamed(['nats-server']));

interface ScenarioResult {
  server: string;          // raw-uws | fastify-pg | fastify-pg-batch | floor-pglite | floor-pg | floor-nats-pg | headwater-embedded | headwater-nats
  scenario: Scenario;
  /** The measured run's runId (message ids `${runId}-${thread}-${n}`). */
  runId?: string;
  /** Batch scenarios: calls per request, calls answered 2xx per second and per-call failures. */
  batchSize?: number;
  callsPerS?: number;
  callsOk?: number;
  callFailures?: number;
  /** Batch scenarios: CPU microseconds per 2xx call, by process (through the drain for headwater). */
  cpuUsPerCall?: { server: number; postgres?: number; nats?: number; total: number };
  load: LoadResult;
  rps: number;             // answers/s
  acceptedPerS: number;    // 2xx answers/s
  failed: number;          // non-2xx + socket errors + timeouts
  completedPerS?: number;  // accepted / (run + drain): landed events per second (headwater)
  drainS?: number;
  serverCpuPct: number;    // % of one core, server process (all its threads)
  storesCpuPct: number;    // postgres + nats-server processes
  loadgenCpuPct?: number;
  machineBusyPct: number;  // of all cores
  rssStartMB?: number; rssEndMB?: number; peakRssMB?: number; vmHwmMB?: number;
  fdsBefore?: number; fdsAfter?: number;
  fdKinds?: { before?: Record<string, number>; after?: Record<string, number> };
  rssSamples?: Array<{ t: number; rssMB: number }>;
  /** Machine busy % during 1 s just before the measured run (other work on the machine). */
  idleCheckBusyPct?: number;
  loadAvg1?: number;
  note?: string;
  /** headwater's HTTP front end (GET /health/ready): uws or node:http. */
  frontEnd?: string;
  /** Server CPU by thread (% of one core): main, node#k (worker / V8 / libuv threads), Name* (chDB pools). */
  threads?: Array<{ thread: string; pct: number }>;
}

async function measure(o: Options, srv: Server, target: Omit<LoadTarget, 'runId' | 'users'>, s: LoadSettings, tmp: string,
  opts: { warmupS: number; scenario: Scenario; fixture?: Fixture; sampleEveryS?: number; uses?: Uses }): Promise<ScenarioResult> {
  const base = { ...target, users: o.users };
  if (opts.warmupS > 0) {
    process.stdout.write(`  ${srv.name}/${opts.scenario}: warm-up ${opts.warmupS} s\n`);
    await runLoad({ ...base, runId: `w${hex(4)}` }, { ...s, durationS: opts.warmupS }, { tool: o.loadgen, tmpDir: tmp });
    await sleep(1000);
  }
  const i0 = machineTicks(); await sleep(1000); const i1 = machineTicks();
  const idleCheckBusyPct = ((i1.busy - i0.busy) / Math.max(1, i1.total - i0.total)) * 100;
  process.stdout.write(`  ${srv.name}/${opts.scenario}: measuring ${s.durationS} s (machine ${idleCheckBusyPct.toFixed(0)} % busy just before, load average ${loadavg()[0]!.toFixed(1)})\n`);
  const fdsBefore = openFds(srv.pid);
  const fdKindsBefore = fdKinds(srv.pid);
  const cpu0 = cpuSeconds(srv.pid) ?? 0;
  const thr0 = threadCpu(srv.pid);
  const stores0 = cpuOfNamed(['postgres', 'nats-server']);
  const pg0 = opts.uses?.pg ? cpuOfPostgres(pgDatabases) : undefined;
  const nats0 = opts.uses?.nats ? natsCpu() : undefined;
  const m0 = machineTicks();
  const t0 = Date.now();
  const samples: Array<{ t: number; rssMB: number }> = [];
  let peak = 0;
  const every = (opts.sampleEveryS ?? 1) * 1000;
  let lastSample = -Infinity;
  const sampler = setInterval(() => {
    const m = memory(srv.pid);
    if (!m) return;
    peak = Math.max(peak, m.rssMB);
    const t = Date.now() - t0;
    if (t - lastSample >= every - 50) { samples.push({ t: Math.round(t / 1000), rssMB: m.rssMB }); lastSample = t; }
  }, 1000);
  const first = memory(srv.pid);
  let load: LoadResult;
  const runId = `r${hex(4)}`;
  try {
    load = await runLoad({ ...base, runId }, s, { tool: o.loadgen, tmpDir: tmp });
  } finally {
    clearInterval(sampler);
  }
  const loadEnded = Date.now();
  { const m = memory(srv.pid); if (m) samples.push({ t: Math.round((loadEnded - t0) / 1000), rssMB: m.rssMB }); }
  const wall = (loadEnded - t0) / 1000;
  const cpu1 = cpuSeconds(srv.pid) ?? cpu0;
  const threads = threadBreakdown(srv.pid, thr0, threadCpu(srv.pid), wall).filter((t) => t.pct >= 1).slice(0, 8);
  const stores1 = cpuOfNamed(['postgres', 'nats-server']);
  const m1 = machineTicks();
  const last = memory(srv.pid);
  const res: ScenarioResult = {
    server: srv.name, scenario: opts.scenario, load, runId,
    rps: load.responses / load.durationS,
    acceptedPerS: load.ok / load.durationS,
    failed: load.non2xx + load.socketErrors + load.timeouts,
    serverCpuPct: ((cpu1 - cpu0) / wall) * 100,
    storesCpuPct: (cpuBetween(stores0, stores1) / wall) * 100,
    loadgenCpuPct: load.loadgenCpuS !== undefined ? (load.loadgenCpuS / wall) * 100 : undefined,
    machineBusyPct: ((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * 100,
    rssStartMB: first?.rssMB, rssEndMB: last?.rssMB, peakRssMB: Math.max(peak, last?.rssMB ?? 0), vmHwmMB: last?.hwmMB,
    threads, fdsBefore, idleCheckBusyPct, loadAvg1: loadavg()[0],
    rssSamples: opts.scenario === 'soak' ? samples : undefined,
  };
  if (opts.fixture) {
    const d = await drain(srv.url, opts.fixture, loadEnded);
    res.drainS = d.drainS;
    res.note = d.drainS === undefined ? d.sentinel : undefined;
    if (d.drainS === undefined) res.failed += 1; // the sentinel is a request too
    if (d.drainS !== undefined) res.completedPerS = load.ok / (load.durationS + d.drainS);
    else process.stdout.write(`  ! after the run: ${d.sentinel}\n`);
  }
  if (target.kind === 'batch') {
    // CPU through the drain (headwater finishes the run's work then), per call answered 2xx.
    const size = target.batch?.size ?? BATCH_SIZE;
    const codes = load.callCodes;
    const callsOk = codes ? Object.entries(codes).reduce((a, [k, v]) => (k.startsWith('2') ? a + v : a), 0) : load.ok * size;
    const callNon2xx = codes ? Object.entries(codes).reduce((a, [k, v]) => (k.startsWith('2') ? a : a + v), 0) : 0;
    const us = (cpuS: number) => (callsOk > 0 ? (cpuS / callsOk) * 1e6 : NaN);
    const server = us((cpuSeconds(srv.pid) ?? cpu1) - cpu0);
    const postgres = pg0 ? us(cpuBetween(pg0, cpuOfPostgres(pgDatabases))) : undefined;
    const nats = nats0 ? us(cpuBetween(nats0, natsCpu())) : undefined;
    res.batchSize = size;
    res.callsOk = callsOk;
    res.callsPerS = callsOk / load.durationS;
    res.callFailures = callNon2xx + (load.non2xx + load.socketErrors + load.timeouts) * size;
    res.cpuUsPerCall = { server, postgres, nats, total: server + (postgres ?? 0) + (nats ?? 0) };
  }
  await sleep(1500); // closed keep-alive sockets and idle pool clients settle
  res.fdsAfter = openFds(srv.pid);
  res.fdKinds = { before: fdKindsBefore, after: fdKinds(srv.pid) };
  return res;
}

function kinds(a: Record<string, number>, b: Record<string, number>): string {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().map((k) => `${k} ${a[k] ?? 0}->${b[k] ?? 0}`).join(', ');
}

function line(r: ScenarioResult): string {
  const f = (n: number | undefined, d = 0) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
  return `  ${r.server}/${r.scenario}: ${f(r.rps)} req/s, ${f(r.acceptedPerS)} accepted/s, ${r.failed} failed, ${r.load.unanswered ?? '-'} unanswered at the end, p50 ${f(r.load.p50Ms, 2)} ms, ` +
    `p99 ${f(r.load.p99Ms, 2)} ms, server CPU ${f(r.serverCpuPct)} %, stores ${f(r.storesCpuPct)} %, loadgen ${f(r.loadgenCpuPct)} %, ` +
    `RSS ${f(r.rssStartMB)}->${f(r.rssEndMB)} MB (peak ${f(r.peakRssMB)}), fds ${r.fdsBefore ?? '-'}->${r.fdsAfter ?? '-'}` +
    (r.fdKinds?.before && r.fdKinds.after ? ` (${kinds(r.fdKinds.before, r.fdKinds.after)})` : '') +
    (r.drainS !== undefined ? `, drain ${r.drainS.toFixed(2)} s` : '') +
    (r.callsPerS !== undefined ? `\n    calls: ${f(r.callsPerS)} 2xx calls/s, ${r.callFailures} call failures, CPU us/call server ${f(r.cpuUsPerCall?.server, 1)}` +
      ` postgres ${f(r.cpuUsPerCall?.postgres, 1)} nats ${f(r.cpuUsPerCall?.nats, 1)} total ${f(r.cpuUsPerCall?.total, 1)}, > 1 s ${r.load.over1s ?? '-'}, > 2 s ${r.load.over2s ?? '-'}` +
      `\n    per-call statuses: ${Object.entries(r.load.callCodes ?? {}).sort().map(([k, v]) => `${k} x${v}`).join(', ') || '-'}` : '') +
    (r.load.statusCodes ? `\n    statuses: ${Object.entries(r.load.statusCodes).sort().map(([k, v]) => `${k} x${v}`).join(', ') || 'none'}` : '') +
    (r.load.firstFailure ? `\n    first failure: ${r.load.firstFailure.replace(/\s+/g, ' ').slice(0, 300)}` : '') +
    (r.threads?.length ? `\n    server CPU by thread (% of a core): ${r.threads.map((t) => `${t.thread} ${t.pct.toFixed(0)}`).join(', ')}` : '');
}

// ---------------------------------------------------------------- main

interface Skip { what: string; reason: string }

async function main() {
  // `npm run bench -- --journeys`: the journey runtime's figures (bench/executions.ts) alone.
  if (process.argv.includes('--journeys')) { await import('./executions.js'); return; }
  const o = parseArgs(process.argv.slice(2));
  const want = (k: string) => !o.only || o.only.has(k);
  const settings: LoadSettings = { connections: o.connections, threads: Math.min(o.threads, o.connections), durationS: o.durationS, timeoutS: 10 };
  const tmp = mkdtempSync(join(tmpdir(), 'hw-bench-'));
  const results: ScenarioResult[] = [];
  const skipped: Skip[] = [];
  const soaks: Array<{ server: string; result: ScenarioResult; firstMB: number; lastMB: number; changePct: number; fdsWarm?: number; fdsEnd?: number; fdDetail?: string }> = [];
  const dbUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
  const natsUrl = process.env.NATS_URL || 'nats://127.0.0.1:4222';
  const started = new Date();
  let benchDb: { name: string; adminUrl: string } | undefined;
  let createBench: CreateBench | undefined;
  let privateNats: { url: string; child: ChildProcess } | undefined;

  /** The NATS server of this run: with --private-nats one started for the run (once), else NATS_URL. */
  let natsChosen: string | undefined;
  const chooseNats = async (): Promise<string> => {
    if (natsChosen) return natsChosen;
    natsChosen = natsUrl;
    if (o.privateNats) {
      try {
        const priv = await startPrivateNats(tmp);
        privateNats = priv;
        natsChosen = priv.url;
        natsPids = [priv.child.pid!];
        process.stdout.write(`  (private nats-server with JetStream at ${priv.url}, pid ${priv.child.pid})\n`);
      } catch (err) {
        process.stdout.write(`  (--private-nats: ${(err as Error).message}; using ${natsUrl})\n`);
      }
    }
    return natsChosen;
  };

  const gs = gitState();
  if (gs.commit) process.stdout.write(`code: ${gs.commit.slice(0, 12)}${gs.dirty?.length ? ` + local changes in ${gs.dirty.length} file(s)` : ''}\n`);
  process.stdout.write(`headwater bench: ${o.quick ? 'quick' : 'full'}${o.soak ? ' + soak' : ''}; load generator ${o.loadgen}` +
    ` (${settings.connections} connections, ${settings.threads} threads, ${settings.durationS} s after ${o.warmupS} s warm-up); ` +
    `${cpus().length} cores, Node ${process.version}\n`);
  if (o.loadgen === 'autocannon') process.stdout.write(findWrk() ? '  (autocannon chosen with --loadgen; --threads applies to wrk only)\n' : '  (wrk not found: autocannon in a separate process; `apt-get install -y wrk` for the preferred generator)\n');

  const baseEnv = { ...process.env };
  for (const k of ['DATABASE_URL', 'NATS_URL', 'CLICKHOUSE_URL', 'PORT', 'HOST', 'HEADWATER_DATA_DIR']) delete baseEnv[k];

  try {
    // ---- raw uWS (the ceiling)
    const single = o.batch !== 'only'; // the single-call scenarios (not with --batch)
    if (want('raw') && single) {
      process.stdout.write('raw-uws: starting\n');
      try {
        const srv = await startChild('raw-uws', [join(BENCH_DIST, 'raw-uws.js'), '--port', '0', '--host', '127.0.0.1'], baseEnv, 20_000);
        try {
          const r = await measure(o, srv, { url: srv.url, kind: 'track', sourceId: 'src_bench' }, settings, tmp, { warmupS: o.warmupS, scenario: 'track' });
          results.push(r); process.stdout.write(line(r) + '\n');
        } finally { await stopServer(srv); }
      } catch (err) { skipped.push({ what: 'raw-uws', reason: `failed: ${(err as Error).message}` }); process.stdout.write(`raw-uws: failed: ${(err as Error).message}\n`); }
    }

    // ---- Fastify + pg
    const pgU = new URL(dbUrl);
    const pgUp = await reachable(pgU.hostname, Number(pgU.port || 5432));
    pgDatabases.push(decodeURIComponent(pgU.pathname.replace(/^\//, '')) || 'postgres');
    if (want('fastify') && single) {
      if (!pgUp) skipped.push({ what: 'fastify-pg', reason: `Postgres not reachable at ${pgU.hostname}:${pgU.port || 5432} (DATABASE_URL)` });
      else {
        process.stdout.write('fastify-pg: starting\n');
        try {
          const srv = await startChild('fastify-pg', [join(BENCH_DIST, 'fastify-pg.js'), '--port', '0', '--host', '127.0.0.1'], { ...baseEnv, DATABASE_URL: dbUrl }, 30_000);
          try {
            const r = await measure(o, srv, { url: srv.url, kind: 'track', sourceId: 'src_bench' }, settings, tmp, { warmupS: o.warmupS, scenario: 'track' });
            results.push(r); process.stdout.write(line(r) + '\n');
          } finally { await stopServer(srv); }
        } catch (err) { skipped.push({ what: 'fastify-pg', reason: `failed: ${(err as Error).message}` }); process.stdout.write(`fastify-pg: failed: ${(err as Error).message}\n`); }
      }
    }

    // ---- the floor: the contract's least work per call on each store (bench/floor.ts)
    // ---- Fastify + pg, batches: the batch scenarios' baseline (bench/fastify-pg-batch.ts)
    if (want('fastify') && o.batch !== 'off') {
      if (!pgUp) skipped.push({ what: 'fastify-pg-batch', reason: `Postgres not reachable at ${pgU.hostname}:${pgU.port || 5432} (DATABASE_URL)` });
      else {
        process.stdout.write('fastify-pg-batch: starting\n');
        try {
          const srv = await startChild('fastify-pg-batch', [join(BENCH_DIST, 'fastify-pg-batch.js'), '--port', '0', '--host', '127.0.0.1'], { ...baseEnv, DATABASE_URL: dbUrl }, 30_000);
          try {
            let replayOf: { runId: string; batches: number } | undefined;
            for (const sc of BATCH_SCENARIOS) {
              const batch = batchShape(sc, replayOf);
              if (!batch) { skipped.push({ what: `fastify-pg-batch/${sc}`, reason: 'nothing to replay (batch20-users1000 not measured)' }); continue; }
              const r = await measure(o, srv, { url: srv.url, kind: 'batch', sourceId: 'src_bench', batch }, settings, tmp, { warmupS: o.warmupS, scenario: sc, uses: { pg: true, nats: false } });
              results.push(r); process.stdout.write(line(r) + '\n');
              if (sc === 'batch20-users1000') replayOf = replaySource(r, settings);
            }
          } finally { await stopServer(srv); }
        } catch (err) { skipped.push({ what: 'fastify-pg-batch', reason: `failed: ${(err as Error).message}` }); process.stdout.write(`fastify-pg-batch: failed: ${(err as Error).message}\n`); }
      }
    }

    if (want('floor') && single) {
      for (const name of ['floor-pglite', 'floor-pg', 'floor-nats-pg'] as const) {
        if (name !== 'floor-pglite' && !pgUp) { skipped.push({ what: name, reason: `Postgres not reachable at ${pgU.hostname}:${pgU.port || 5432} (DATABASE_URL)` }); continue; }
        const args = name === 'floor-pglite' ? ['--store', 'pglite'] : name === 'floor-pg' ? ['--store', 'pg'] : ['--store', 'pg', '--stream', 'nats'];
        const env = { ...baseEnv, DATABASE_URL: dbUrl };
        if (name === 'floor-nats-pg') {
          const nU = new URL(await chooseNats());
          if (!await reachable(nU.hostname, Number(nU.port || 4222))) { skipped.push({ what: name, reason: `NATS not reachable (${nU.host})` }); continue; }
          Object.assign(env, { NATS_URL: nU.toString() });
        }
        process.stdout.write(`${name}: starting\n`);
        try {
          const srv = await startChild(name, [join(BENCH_DIST, 'floor.js'), ...args, '--port', '0', '--host', '127.0.0.1'], env, 30_000);
          try {
            // Identify (a new profile per call) where headwater's identify target applies: NATS mode, and embedded.
            for (const kind of name === 'floor-pg' ? ['track'] as const : ['track', 'identify'] as const) {
              const r = await measure(o, srv, { url: srv.url, kind, sourceId: 'src_bench' }, settings, tmp, { warmupS: o.warmupS, scenario: kind });
              results.push(r); process.stdout.write(line(r) + '\n');
            }
          } finally { await stopServer(srv); }
        } catch (err) { skipped.push({ what: name, reason: `failed: ${(err as Error).message}` }); process.stdout.write(`${name}: failed: ${(err as Error).message}\n`); }
      }
    }

    // ---- headwater, both modes
    const modes: Array<{ key: 'embedded' | 'nats'; name: string }> = [{ key: 'embedded', name: 'headwater-embedded' }, { key: 'nats', name: 'headwater-nats' }];
    for (const mode of modes) {
      if (!want(mode.key)) continue;
      const env: NodeJS.ProcessEnv = { ...baseEnv, HEADWATER_LOG_LEVEL: process.env.HEADWATER_LOG_LEVEL ?? 'warn' };
      if (mode.key === 'nats') {
        const useNats = await chooseNats();
        const nU = new URL(useNats);
        const natsUp = await reachable(nU.hostname, Number(nU.port || 4222));
        if (!pgUp || !natsUp) {
          skipped.push({ what: mode.name, reason: [!pgUp && `Postgres not reachable (${pgU.host})`, !natsUp && `NATS not reachable (${nU.host})`].filter(Boolean).join('; ') });
          process.stdout.write(`${mode.name}: skipped (${skipped.at(-1)!.reason})\n`);
          continue;
        }
        // A fresh database per run, so each run starts from the same (empty) state; dropped after.
        const name = `headwater_bench_${hex(4)}`;
        const admin = new pg.Client({ connectionString: dbUrl });
        try {
          await admin.connect();
          await admin.query(`CREATE DATABASE ${name}`);
          benchDb = { name, adminUrl: dbUrl };
          pgDatabases.push(name);
          const u = new URL(dbUrl); u.pathname = `/${name}`;
          env.DATABASE_URL = u.toString();
        } catch (err) {
          process.stdout.write(`  (cannot create a bench database: ${(err as Error).message}; using ${dbUrl} as given)\n`);
          env.DATABASE_URL = dbUrl;
        } finally { await admin.end().catch(() => {}); }
        env.NATS_URL = useNats;
        // headwater's stream and consumer names are fixed: every headwater process on this NATS
        // server shares one work queue, and a call pulled by another process (another database)
        // is answered there. Say so when someone else is pulling.
        const others = await sharedStreamPullers(useNats);
        if (others) {
          process.stdout.write(`  ! ${others}: calls may be processed (and answered 404 "source not found") by those processes; --private-nats avoids it\n`);
          natsWarnings.push(others);
        }
        if (process.env.CLICKHOUSE_URL) env.CLICKHOUSE_URL = process.env.CLICKHOUSE_URL;
      }
      // One server process per mode; replaced by a fresh one (new data directory) only when a
      // scenario left it stalled, so that the next scenario is still measured.
      interface Running { srv: Server; fx: Fixture; dataDir: string; operatorToken: string }
      const launch = async (): Promise<Running | undefined> => {
        const dataDir = mkdtempSync(join(tmp, `${mode.key}-`));
        const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
        process.stdout.write(`${mode.name}: starting\n`);
        const tStart = Date.now();
        let srv: Server | undefined;
        try {
          srv = await startChild(mode.name, [...serverNodeArgs(), join(ROOT, 'bin', 'headwater.js'), 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir],
            { ...env, HEADWATER_OPERATOR_TOKEN: operatorToken }, 180_000);
          process.stdout.write(`${mode.name}: listening after ${((Date.now() - tStart) / 1000).toFixed(1)} s\n`);
          const fx = await headwaterFixture(srv.url, operatorToken);
          process.stdout.write(`${mode.name}: front end ${fx.frontEnd} (Node ${process.versions.node})\n`);
          return { srv, fx, dataDir, operatorToken };
        } catch (err) {
          skipped.push({ what: mode.name, reason: `did not start: ${(err as Error).message.split('\n')[0]}` });
          process.stdout.write(`${mode.name}: did not start: ${(err as Error).message}\n`);
          if (srv) await stopServer(srv, 15_000);
          rmSync(dataDir, { recursive: true, force: true });
          return undefined;
        }
      };
      const retire = async (r: Running) => { await stopServer(r.srv, 15_000); rmSync(r.dataDir, { recursive: true, force: true }); };
      const stalled = (r: ScenarioResult) => r.load.responses === 0 || r.note !== undefined;

      let run = await launch();
      try {
        const plan: Scenario[] = [
          ...(single ? ['track', 'identify', ...(o.segments ? ['segments' as const] : []), ...(o.soak ? ['soak' as const] : [])] as const : []),
          ...(o.batch !== 'off' ? BATCH_SCENARIOS : []),
        ];
        // The replay re-sends batch20-users1000's bodies to the same process (same org and store).
        let replayOf: { runId: string; batches: number; pid: number } | undefined;
        for (const scenario of plan) {
          if (!run) run = await launch();
          if (!run) break;
          if (scenario === 'batch20-replay' && replayOf?.pid !== run.srv.pid) {
            skipped.push({ what: `${mode.name}/${scenario}`, reason: 'nothing to replay (batch20-users1000 not measured on this process)' });
            continue;
          }
          const target = { url: run.srv.url, apiKey: run.fx.apiKey, sourceId: run.fx.sourceId };
          let r: ScenarioResult;
          try {
            if (scenario === 'soak') {
              process.stdout.write(`${mode.name}: soak, ${o.soakWarmupS} s warm-up then ${o.soakS} s of track load, RSS every 10 s\n`);
              r = await measure(o, run.srv, { ...target, kind: 'track' }, { ...settings, durationS: o.soakS }, tmp,
                { warmupS: o.soakWarmupS, scenario: 'soak', fixture: run.fx, sampleEveryS: 10 });
            } else if (scenario === 'segments') {
              // The same track load in a fresh org that has 50 segments (compared with 'track').
              const fx = await headwaterFixture(run.srv.url, run.operatorToken);
              const t0 = Date.now();
              await defineSegments(http, run.srv.url, fx.admin);
              process.stdout.write(`${mode.name}: 50 segments defined in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
              r = await measure(o, run.srv, { url: run.srv.url, apiKey: fx.apiKey, sourceId: fx.sourceId, kind: 'track' }, settings, tmp, { warmupS: o.warmupS, scenario, fixture: fx });
            } else if (isBatch(scenario)) {
              const batch = batchShape(scenario, replayOf)!;
              r = await measure(o, run.srv, { ...target, kind: 'batch', batch }, settings, tmp,
                { warmupS: o.warmupS, scenario, fixture: run.fx, uses: { pg: mode.key === 'nats', nats: mode.key === 'nats' } });
              if (scenario === 'batch20-users1000') { const src = replaySource(r, settings); replayOf = src ? { ...src, pid: run.srv.pid } : undefined; }
            } else {
              r = await measure(o, run.srv, { ...target, kind: scenario }, settings, tmp, { warmupS: o.warmupS, scenario, fixture: run.fx });
            }
          } catch (err) {
            process.stdout.write(`${mode.name}/${scenario}: failed: ${(err as Error).message}\n  server stderr: ${run.srv.stderrTail().slice(-1000)}\n`);
            skipped.push({ what: `${mode.name}/${scenario}`, reason: `failed: ${(err as Error).message}` });
            await retire(run); run = undefined;
            continue;
          }
          r.frontEnd = run.fx.frontEnd;
          results.push(r); process.stdout.write(line(r) + '\n');
          if (scenario === 'soak') {
            const pts = (r.rssSamples ?? []).filter((p) => p.t >= 10);
            if (pts.length >= 2) {
              const firstMB = pts[0]!.rssMB; const lastMB = pts.at(-1)!.rssMB;
              soaks.push({ server: mode.name, result: r, firstMB, lastMB, changePct: ((lastMB - firstMB) / firstMB) * 100, fdsWarm: r.fdsBefore, fdsEnd: r.fdsAfter,
                fdDetail: r.fdKinds?.before && r.fdKinds.after ? kinds(r.fdKinds.before, r.fdKinds.after) : undefined });
              process.stdout.write(`  RSS samples (s:MB): ${pts.map((p) => `${p.t}:${p.rssMB.toFixed(0)}`).join(' ')}\n`);
            }
          }
          if (stalled(r)) {
            const tail = run.srv.stderrTail().trim().split('\n').slice(-3).map((l) => l.slice(0, 300)).join('\n    ');
            process.stdout.write(`${mode.name}: stalled during ${scenario}; replacing the process for the next scenario\n    server stderr: ${tail || '(empty)'}\n`);
            r.note = `${r.note ?? 'no answers'}; server process replaced afterwards`;
            await retire(run); run = undefined;
          }
        }
        if (o.segments && mode.key === 'nats' && env.DATABASE_URL) {
          if (!run) run = await launch();
          if (run) {
            try {
              const fx = await headwaterFixture(run.srv.url, run.operatorToken);
              process.stdout.write(`${mode.name}: writing 100,000 profiles, then creating a segment over them\n`);
              createBench = await segmentCreateBench(http, run.srv.url, env.DATABASE_URL, fx);
              process.stdout.write(`  segment create over ${createBench.profiles} profiles: ${createBench.seconds.toFixed(2)} s, ${createBench.members} members${createBench.note ? ` (${createBench.note})` : ''}\n`);
            } catch (err) {
              skipped.push({ what: `${mode.name}/segment-create`, reason: `failed: ${(err as Error).message}` });
            }
          }
        }
      } finally {
        if (run) await retire(run);
      }
    }
  } finally {
    killAllSync();
    if (privateNats) {
      const c = privateNats.child;
      if (c.exitCode === null && c.signalCode === null) await new Promise<void>((r) => { c.once('exit', () => r()); killChild(c, 'SIGKILL'); });
    }
    if (benchDb) {
      const admin = new pg.Client({ connectionString: benchDb.adminUrl });
      try { await admin.connect(); await admin.query(`DROP DATABASE IF EXISTS ${benchDb.name} WITH (FORCE)`); }
      catch (err) { process.stdout.write(`  (could not drop ${benchDb.name}: ${(err as Error).message})\n`); }
      finally { await admin.end().catch(() => {}); }
    }
    rmSync(tmp, { recursive: true, force: true });
  }

  report(o, settings, started, results, skipped, soaks, createBench);
}

// ---------------------------------------------------------------- report

/**
 * The batch scenarios: prints their table, adds their targets to `targets` (issue 22) and answers
 * the markdown for bench/results/batch.md (undefined when no batch scenario was measured).
 */
function batchSection(o: Options, s: LoadSettings, results: ScenarioResult[], targets: Target[], started: Date): string | undefined {
  const rs = results.filter((r) => isBatch(r.scenario));
  if (!rs.length) return undefined;
  const find = (server: string, scenario: string) => rs.find((r) => r.server === server && r.scenario === scenario);
  const f = (n: number | undefined, d = 0) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
  const cratio = (a?: ScenarioResult, b?: ScenarioResult) => (a?.callsPerS !== undefined && b?.callsPerS ? a.callsPerS / b.callsPerS : undefined);
  const base = (r: ScenarioResult) => (r.server === 'fastify-pg-batch' ? undefined : find('fastify-pg-batch', r.scenario));
  const statuses = (r: ScenarioResult) => Object.entries(r.load.callCodes ?? {}).sort().map(([k, v]) => `${k}x${v}`).join(' ') || '-';
  const head = ['server', 'scenario', 'req/s', 'calls/s', 'call fails', 'call statuses', 'CPU us/call srv', 'pg', 'nats', 'total', 'p50 ms', 'p99 ms', '> 1 s', '> 2 s', 'x baseline'];
  const rows = rs.map((r) => [r.server, r.scenario, f(r.rps), f(r.callsPerS), String(r.callFailures ?? '-'), statuses(r),
    f(r.cpuUsPerCall?.server, 1), f(r.cpuUsPerCall?.postgres, 1), f(r.cpuUsPerCall?.nats, 1), f(r.cpuUsPerCall?.total, 1),
    r.load.responses ? f(r.load.p50Ms, 1) : '-', r.load.responses ? f(r.load.p99Ms, 1) : '-', String(r.load.over1s ?? '-'), String(r.load.over2s ?? '-'),
    f(cratio(r, base(r)), 2)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const fmt = (row: string[]) => row.map((c, i) => (i < 2 || i === 5 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(`\nbatch scenarios (${BATCH_SIZE} calls per POST /v1/batch):\n${fmt(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(fmt).join('\n')}\n`);
  const legend = 'calls/s: calls answered 2xx (per-call status in the 200 answers) per second; call fails: per-call non-2xx + ' +
    `${BATCH_SIZE} per failed request; CPU us/call: CPU time per 2xx call of the server process (all threads), the Postgres processes ` +
    '(backends of the bench\'s databases + the shared background processes) and nats-server, measured over the run (headwater: until its ' +
    'drain sentinel is listed); > 1 s / > 2 s: requests slower than that (wrk histogram, timeouts included); x baseline: calls/s / fastify-pg-batch calls/s in the same scenario.';
  process.stdout.write(`  ${legend}\n`);

  const mine: Target[] = [];
  const add = (name: string, measured: string | undefined, wanted: string, pass: boolean | undefined) =>
    mine.push({ name, measured: measured ?? 'not measured', wanted, pass: measured === undefined || pass === undefined ? null : pass });
  for (const [server, label, min] of [['headwater-nats', 'nats+pg', 0.6], ['headwater-embedded', 'embedded', 0.5]] as const) {
    const u = find(server, 'batch20-users1000');
    const b = find('fastify-pg-batch', 'batch20-users1000');
    const rb = cratio(u, b);
    add(`${label}: batch-20, 1,000 users: calls/s vs Fastify+pg batch`, rb === undefined ? undefined : `${rb.toFixed(2)}x (${f(u!.callsPerS)} vs ${f(b!.callsPerS)})`, `>= ${min}x`, rb === undefined ? undefined : rb >= min);
    const cpu = u?.cpuUsPerCall?.total;
    add(`${label}: batch-20, 1,000 users: CPU per event, all processes`, cpu === undefined || !Number.isFinite(cpu) ? undefined :
      `${cpu.toFixed(1)} us (server ${f(u!.cpuUsPerCall!.server, 1)}${u!.cpuUsPerCall!.postgres !== undefined ? `, postgres ${f(u!.cpuUsPerCall!.postgres, 1)}` : ''}${u!.cpuUsPerCall!.nats !== undefined ? `, nats ${f(u!.cpuUsPerCall!.nats, 1)}` : ''})`,
      '<= 60 us', cpu === undefined ? undefined : cpu <= 60);
    const nu = cratio(find(server, 'batch20-newusers'), u);
    add(`${label}: new userId per call vs 1,000 users`, nu === undefined ? undefined : `${nu.toFixed(2)}x`, '>= 0.7x', nu === undefined ? undefined : nu >= 0.7);
    const rp = find(server, 'batch20-replay');
    const rr = cratio(rp, u);
    const replayed = rp?.load.callCodes ? `${rp.load.callCodes['200'] ?? 0} of ${Object.values(rp.load.callCodes).reduce((a, v) => a + v, 0)} calls answered 200 replay` : undefined;
    add(`${label}: replays vs 1,000 users`, rr === undefined ? undefined : `${rr.toFixed(2)}x${replayed ? ` (${replayed})` : ''}`, '>= 1x', rr === undefined ? undefined : rr >= 1);
    for (const sc of BATCH_SCENARIOS) {
      const r = find(server, sc);
      add(`${label}: ${sc}: p99 at ${s.connections} connections, requests over 2 s`,
        r ? (r.load.responses ? `p99 ${r.load.p99Ms.toFixed(1)} ms, ${r.load.over2s ?? '?'} over 2 s` : 'no answers') : undefined,
        '< 250 ms, 0', r ? r.load.responses > 0 && r.load.p99Ms < 250 && r.load.over2s === 0 : undefined);
    }
  }
  targets.push(...mine);

  const gs = gitState();
  const md: string[] = [];
  md.push('# Batch scenarios (issue 22)', '');
  md.push(`Written by \`npm run bench\` (${o.batch === 'only' ? '--batch' : 'full run'}${o.quick ? ' --quick' : ''}) on ${started.toISOString()}; code ${gs.commit?.slice(0, 12) ?? '?'}` +
    `${gs.dirty?.length ? ` + local changes in ${gs.dirty.length} file(s)` : ''}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}.`);
  md.push(`Load: ${o.loadgen}, ${s.connections} connections, ${s.threads} threads, ${s.durationS} s after a ${o.warmupS} s warm-up (messageIds of its own), ` +
    `${BATCH_SIZE} calls per \`POST /v1/batch\`, userId among ${o.users}; headwater NATS mode on ${o.privateNats ? 'a private nats-server' : 'NATS_URL'} and a fresh database.`);
  md.push('Baseline: bench/fastify-pg-batch.ts (Fastify + pg: one transaction per request, a multi-row event INSERT ... ON CONFLICT (messageId) DO NOTHING, a multi-row profile upsert with jsonb traits merge).');
  md.push('Scenarios: batch20-users1000 (track, userId among the users), batch20-newusers (track, a new userId per call), batch20-replay (batch20-users1000\'s bodies again: every messageId stored), batch20-mix (1 identify per 4 track calls).');
  md.push('Other work ran on the machine at the same time: compare the ratios, not the absolute figures.', '');
  md.push(`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 || i === 5 ? '---' : '---:')).join('|')}|`);
  for (const row of rows) md.push(`| ${row.join(' | ')} |`);
  md.push('', legend, '', '## Targets', '');
  for (const t of mine) md.push(`- **${t.pass === null ? 'SKIP' : t.pass ? 'PASS' : 'FAIL'}** ${t.name}: ${t.measured} (want ${t.wanted})`);
  const notes = rs.filter((r) => r.load.firstFailure || r.note || (r.idleCheckBusyPct ?? 0) > 15).map((r) =>
    `- ${r.server}/${r.scenario}: ${[r.note, r.load.firstFailure && `first failure: ${r.load.firstFailure.replace(/\s+/g, ' ').slice(0, 200)}`,
      (r.idleCheckBusyPct ?? 0) > 15 && `machine ${r.idleCheckBusyPct!.toFixed(0)} % busy just before`].filter(Boolean).join('; ')}`);
  if (notes.length) md.push('', '## Notes', '', ...notes);
  return md.join('\n') + '\n';
}

interface Target { name: string; measured: string; wanted: string; pass: boolean | null }

const answeredAny = (r: ScenarioResult) => r.load.responses > 0;

/** The commit measured and whether the tree had local changes (read-only git commands). */
function gitState(): { commit?: string; dirty?: string[] } {
  const rev = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const st = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' });
  return {
    commit: rev.status === 0 ? rev.stdout.trim() : undefined,
    dirty: st.status === 0 ? st.stdout.split('\n').map((l) => l.trim()).filter((l) => l && !l.endsWith('bench/results/latest.json')) : undefined,
  };
}

function report(o: Options, s: LoadSettings, started: Date, results: ScenarioResult[], skipped: Skip[],
  soaks: Array<{ server: string; firstMB: number; lastMB: number; changePct: number; fdsWarm?: number; fdsEnd?: number; fdDetail?: string }>,
  createBench?: CreateBench) {
  const find = (server: string, scenario: string) => results.find((r) => r.server === server && r.scenario === scenario);
  const raw = find('raw-uws', 'track');
  const fast = find('fastify-pg', 'track');
  const f = (n: number | undefined, d = 0) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
  const ratio = (a?: ScenarioResult, b?: ScenarioResult) => (a && b && b.acceptedPerS > 0 ? a.acceptedPerS / b.acceptedPerS : undefined);

  const head = ['server', 'scenario', 'req/s', 'accepted/s', 'failed', 'open@end', 'p50 ms', 'p99 ms', 'srv CPU%', 'pg+nats CPU%', 'loadgen CPU%', 'machine%', 'peak RSS MB', 'drain s', 'completed/s', 'x raw', 'x fastify'];
  const rows = results.filter((r) => !isBatch(r.scenario)).map((r) => [r.server, r.scenario, f(r.rps), f(r.acceptedPerS), String(r.failed), String(r.load.unanswered ?? '-'),
    answeredAny(r) ? f(r.load.p50Ms, 2) : '-', answeredAny(r) ? f(r.load.p99Ms, 2) : '-',
    f(r.serverCpuPct), f(r.storesCpuPct), f(r.loadgenCpuPct), f(r.machineBusyPct), f(r.peakRssMB), f(r.drainS, 2), f(r.completedPerS),
    f(ratio(r, raw), 3), f(ratio(r, fast), 2)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const fmt = (row: string[]) => row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  if (rows.length) process.stdout.write(`\n${fmt(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(fmt).join('\n')}\n`);
  if (rows.length) process.stdout.write('  accepted/s: 2xx answers/s (headwater answers after its worker: accepted = processed); failed: non-2xx + socket errors + timeouts\n' +
    '  (+1 when the post-run sentinel call failed); open@end: requests unanswered when the load stopped (up to the connection count is\n' +
    '  normal; all of them with no answers means the server stalled); srv CPU%: server process, all threads, % of one core;\n' +
    '  drain s: end of load until a sentinel track call is listed by GET /v1/events; completed/s: accepted / (run + drain).\n');

  const targets: Target[] = [];
  const ge = (name: string, a: ScenarioResult | undefined, b: ScenarioResult | undefined, min: number, bName: string) => {
    const rt = ratio(a, b);
    targets.push({ name, measured: rt === undefined ? 'not measured' : `${rt.toFixed(3)}x ${bName}`, wanted: `>= ${min}x`, pass: rt === undefined ? null : rt >= min });
  };
  const emb = find('headwater-embedded', 'track');
  const answered = (r: ScenarioResult) => r.load.responses > 0;
  const nats = find('headwater-nats', 'track');
  const natsId = find('headwater-nats', 'identify');
  ge('embedded: tracked events/s vs raw uWS', emb, raw, 0.30, 'raw');
  targets.push({
    name: 'embedded: zero failed requests',
    measured: emb ? `${emb.failed} failed, ${emb.load.responses} answered${emb.note ? `; ${emb.note}` : ''}` : 'not measured',
    wanted: '0 failed', pass: emb ? emb.failed === 0 && answered(emb) : null,
  });
  targets.push({
    name: `embedded: p99 at ${s.connections} connections`,
    measured: emb ? (answered(emb) ? `${emb.load.p99Ms.toFixed(2)} ms` : 'no answers') : 'not measured',
    wanted: '< 50 ms', pass: emb ? answered(emb) && emb.load.p99Ms < 50 : null,
  });
  ge('nats+pg: tracked events/s vs raw uWS', nats, raw, 0.25, 'raw');
  ge('nats+pg: tracked events/s vs Fastify+pg', nats, fast, 3, 'fastify');
  ge('nats+pg: identify-heavy calls/s vs raw uWS', natsId, raw, 0.15, 'raw');
  for (const k of ['headwater-embedded', 'headwater-nats']) {
    const sk = soaks.find((x) => x.server === k);
    targets.push({ name: `${k}: memory flat over the soak`, measured: sk ? `${sk.firstMB.toFixed(0)} -> ${sk.lastMB.toFixed(0)} MB (${sk.changePct >= 0 ? '+' : ''}${sk.changePct.toFixed(1)} %)` : (o.soak ? 'not measured' : 'not measured (run with --soak)'), wanted: 'within 10 %', pass: sk ? Math.abs(sk.changePct) <= 10 : null });
    targets.push({ name: `${k}: no growth in open handles (fds) over the soak`, measured: sk ? `${sk.fdsWarm ?? '-'} -> ${sk.fdsEnd ?? '-'}${sk.fdDetail ? ` (${sk.fdDetail})` : ''}` : (o.soak ? 'not measured' : 'not measured (run with --soak)'), wanted: '<= +2', pass: sk && sk.fdsWarm !== undefined && sk.fdsEnd !== undefined ? sk.fdsEnd - sk.fdsWarm <= 2 : null });
  }
  if (o.segments) {
    ge('embedded: track with 50 segments vs without', find('headwater-embedded', 'segments'), emb, 0.8, 'no segments');
    ge('nats+pg: track with 50 segments vs without', find('headwater-nats', 'segments'), nats, 0.8, 'no segments');
    targets.push({
      name: 'nats+pg: create a segment over 100,000 profiles',
      measured: createBench ? `${createBench.seconds.toFixed(2)} s (${createBench.members} members)${createBench.note ? `; ${createBench.note}` : ''}` : 'not measured',
      wanted: '< 10 s', pass: createBench ? !createBench.note && createBench.seconds < 10 : null,
    });
  }
  const embId = find('headwater-embedded', 'identify');
  const floorLite = find('floor-pglite', 'track');
  const floorPg = find('floor-pg', 'track');
  const floorNats = find('floor-nats-pg', 'track');
  // The floor bounds headwater from above: a target the floor misses cannot be met on these stores.
  const floorInfo = (label: string, floor: ScenarioResult | undefined, mine: ScenarioResult | undefined, want: number, b: ScenarioResult | undefined, bName: string) => {
    const fr = ratio(floor, b);
    if (fr === undefined) return undefined;
    const mr = ratio(mine, floor);
    return `${label}: ${fr.toFixed(3)}x ${bName} (target ${want}x: ${fr >= want ? 'the floor meets it' : 'the floor itself misses it'})` +
      (mr !== undefined ? `; headwater at ${mr.toFixed(2)}x of the floor` : '');
  };
  const info = [
    embId && raw ? `embedded identify-heavy: ${ratio(embId, raw)!.toFixed(3)}x raw (informational)` : undefined,
    emb && fast ? `embedded track: ${ratio(emb, fast)!.toFixed(2)}x fastify (informational)` : undefined,
    floorInfo('floor on PGlite (embedded track\'s floor)', floorLite, emb, 0.30, raw, 'raw'),
    floorInfo('floor on Postgres, no stream', floorPg, undefined, 0.25, raw, 'raw'),
    floorInfo('floor on JetStream + Postgres (NATS track\'s floor)', floorNats, nats, 0.25, raw, 'raw'),
    floorInfo('floor on JetStream + Postgres vs Fastify', floorNats, undefined, 3, fast, 'fastify'),
    floorInfo('identify floor on PGlite', find('floor-pglite', 'identify'), embId, 0.15, raw, 'raw'),
    floorInfo('identify floor on JetStream + Postgres', find('floor-nats-pg', 'identify'), natsId, 0.15, raw, 'raw'),
  ].filter(Boolean);

  const before = targets.length;
  const batchMd = batchSection(o, s, results, targets, started);
  const batchTargetCount = targets.length - before;

  process.stdout.write('\ntargets (ratios measured in this run):\n');
  // With --batch only the batch targets apply (the others would all read "not measured").
  if (o.batch === 'only') targets.splice(0, targets.length - (batchTargetCount ?? 0));
  for (const t of targets) process.stdout.write(`  ${t.pass === null ? 'SKIP' : t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.measured} (want ${t.wanted})\n`);
  for (const i of info) process.stdout.write(`  info  ${i}\n`);
  for (const sk of skipped) process.stdout.write(`  skipped ${sk.what}: ${sk.reason}\n`);
  for (const r of results) if (r.note) process.stdout.write(`  note ${r.server}/${r.scenario}: ${r.note}\n`);
  for (const r of results) {
    if (r.load.non2xx > 0) {
      const bad = Object.entries(r.load.statusCodes ?? {}).filter(([k]) => !k.startsWith('2')).map(([k, v]) => `${k} x${v}`).join(', ');
      if (r.server === 'headwater-nats' && /source not found/.test(r.load.firstFailure ?? '')) {
        process.stdout.write(`  note ${r.server}/${r.scenario}: "source not found" for the bench's own source: calls were most likely pulled by another headwater process on the shared NATS streams (run with --private-nats)\n`);
      }
      process.stdout.write(`  note ${r.server}/${r.scenario}: ${r.load.non2xx} non-2xx answers${bad ? ` (${bad})` : ''}${r.load.firstFailure ? `; first: ${r.load.firstFailure.replace(/\s+/g, ' ').slice(0, 200)}` : ''}\n`);
    }
  }
  for (const n of stopNotes) if (n.killed) process.stdout.write(`  note ${n.server}: ${n.note}\n`);
  const busy = results.filter((r) => (r.idleCheckBusyPct ?? 0) > 15);
  if (busy.length) process.stdout.write(`  note: the machine was busy with other work before ${busy.map((r) => `${r.server}/${r.scenario} (${r.idleCheckBusyPct!.toFixed(0)} %)`).join(', ')}; figures are noisier than usual\n`);

  const outDir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  const out = {
    startedAt: started.toISOString(), finishedAt: new Date().toISOString(),
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    code: gitState(),
    mode: o.quick ? 'quick' : 'full', soak: o.soak,
    settings: { ...s, warmupS: o.warmupS, loadgen: o.loadgen, users: o.users, soakS: o.soak ? o.soakS : undefined },
    results, ratios: Object.fromEntries(results.map((r) => [`${r.server}/${r.scenario}`, { vsRaw: ratio(r, raw), vsFastify: ratio(r, fast) }])),
    targets, skipped, soaks, createBench, stops: stopNotes, natsWarnings, privateNats: o.privateNats,
  };
  writeFileSync(join(outDir, 'latest.json'), JSON.stringify(out, null, 2) + '\n');
  process.stdout.write(`\nresults written to bench/results/latest.json\n`);
  if (batchMd) {
    writeFileSync(join(outDir, 'batch.md'), batchMd);
    process.stdout.write('batch figures written to bench/results/batch.md\n');
  }
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  killAllSync();
  process.exit(1);
});
