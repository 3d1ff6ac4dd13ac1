// One measured scenario of the bench harness: warm-up, the load generator's run, CPU, memory and
// descriptors of the server and the stores, the drain, and the printed line.
import { loadavg } from 'node:os';
import { runLoad, type BatchShape, type CallKind, type LoadResult, type LoadSettings, type LoadTarget } from './load.js';
import { cpuBetween, cpuOfNamed, cpuOfPids, cpuOfPostgres, cpuSeconds, fdKinds, fdTargets, filesDiff, machineTicks, memory, openFds, openFiles, threadBreakdown, threadCpu } from './procstat.js';
import type { Options } from './run-args.js';
import { drain, sleep, hex, type Fixture, type Server } from './run-servers.js';
import { statementLines, type StatementRow, type Statements } from './pg-statements.js';

// ---------------------------------------------------------------- scenarios

export const BATCH_SCENARIOS = ['batch20-users1000', 'batch20-newusers', 'batch20-replay', 'batch20-mix'] as const;
export type BatchScenario = typeof BATCH_SCENARIOS[number];
export type Scenario = Exclude<CallKind, 'batch'> | 'soak' | 'segments' | BatchScenario;
export const isBatch = (s: string): s is BatchScenario => (BATCH_SCENARIOS as readonly string[]).includes(s);
export const BATCH_SIZE = 20;

/** The bodies of a batch scenario; the replay needs the run it replays (runId, batches stored per thread). */
export function batchShape(s: BatchScenario, replayOf?: { runId: string; batches: number }): BatchShape | undefined {
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
export function replaySource(r: ScenarioResult, s: LoadSettings): { runId: string; batches: number } | undefined {
  const per = r.load.perThread;
  if (!r.runId || !per?.length) return undefined;
  const batches = Math.floor(Math.min(...per) * 0.9) - Math.ceil(s.connections / Math.max(1, s.threads));
  return batches >= 1 ? { runId: r.runId, batches } : undefined;
}

/** Which store servers a scenario's CPU per call counts (Postgres / NATS of this run). */
export interface Uses { pg: boolean; nats: boolean }
/** Itemizes Postgres's statements of the measured run (bench/pg-statements.ts), in these databases. */
export interface StatementsIn { s: Statements; databases: string[] }
/** Databases whose Postgres backends are the bench's (see cpuOfPostgres); the NATS server's pid when private. */
export const pgDatabases: string[] = [];
export const natsPids: number[] = [];
export const natsCpu = () => (natsPids.length ? cpuOfPids(natsPids) : cpuOfNamed(['nats-server']));

export interface ScenarioResult {
  server: string;          // raw-uws | fastify-pg | fastify-pg-batch | floor-pglite | floor-pg | floor-nats-pg | headwater-embedded | headwater-nats
  scenario: Scenario;
  /** The measured run's runId (message ids `${runId}-${thread}-${n}`). */
  runId?: string;
  /** With --repeat: which run of the scenario on this server this is (2 and on; the first has none). */
  run?: number;
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
  /** Soak only: the files the server opened and closed between the start and the end. */
  fdFiles?: { opened: string[]; closed: string[] };
  rssSamples?: Array<{ t: number; rssMB: number }>;
  /** Machine busy % during 1 s just before the measured run (other work on the machine). */
  idleCheckBusyPct?: number;
  loadAvg1?: number;
  note?: string;
  /** headwater's HTTP front end (GET /health/ready): uws or node:http. */
  frontEnd?: string;
  /** Server CPU by thread (% of one core): main, node#k (worker / V8 / libuv threads), Name* (chDB pools). */
  threads?: Array<{ thread: string; pct: number }>;
  /** Postgres statements that took longest during the measured run, when pg_stat_statements is loaded. */
  statements?: StatementRow[];
}

export async function measure(o: Options, srv: Server, target: Omit<LoadTarget, 'runId' | 'users'>, s: LoadSettings, tmp: string,
  opts: { warmupS: number; scenario: Scenario; fixture?: Fixture; sampleEveryS?: number; uses?: Uses; statements?: StatementsIn }): Promise<ScenarioResult> {
  const base = { ...target, users: o.users };
  if (opts.warmupS > 0) {
    process.stdout.write(`  ${srv.name}/${opts.scenario}: warm-up ${opts.warmupS} s\n`);
    await runLoad({ ...base, runId: `w${hex(4)}` }, { ...s, durationS: opts.warmupS }, { tool: o.loadgen, tmpDir: tmp });
    await sleep(1000);
  }
  const i0 = machineTicks(); await sleep(1000); const i1 = machineTicks();
  const idleCheckBusyPct = ((i1.busy - i0.busy) / Math.max(1, i1.total - i0.total)) * 100;
  process.stdout.write(`  ${srv.name}/${opts.scenario}: measuring ${s.durationS} s (machine ${idleCheckBusyPct.toFixed(0)} % busy just before, load average ${loadavg()[0]!.toFixed(1)})\n`);
  await opts.statements?.s.reset();
  const fdsBefore = openFds(srv.pid);
  const targetsBefore = fdTargets(srv.pid);
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
  if (opts.statements) {
    res.statements = await opts.statements.s.top(opts.statements.databases, 8);
    for (const l of statementLines(res.statements, res.callsOk)) process.stdout.write(l + '\n');
  }
  await sleep(1500); // closed keep-alive sockets and idle pool clients settle
  res.fdsAfter = openFds(srv.pid);
  const targetsAfter = fdTargets(srv.pid);
  res.fdKinds = { before: targetsBefore && fdKinds(targetsBefore), after: targetsAfter && fdKinds(targetsAfter) };
  if (opts.scenario === 'soak' && targetsBefore && targetsAfter) res.fdFiles = filesDiff(openFiles(targetsBefore), openFiles(targetsAfter));
  return res;
}

export function kinds(a: Record<string, number>, b: Record<string, number>): string {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().map((k) => `${k} ${a[k] ?? 0}->${b[k] ?? 0}`).join(', ');
}

export function line(r: ScenarioResult): string {
  const f = (n: number | undefined, d = 0) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
  return `  ${r.server}/${r.scenario}${r.run ? ` (run ${r.run})` : ''}: ${f(r.rps)} req/s, ${f(r.acceptedPerS)} accepted/s, ${r.failed} failed, ${r.load.unanswered ?? '-'} unanswered at the end, p50 ${f(r.load.p50Ms, 2)} ms, ` +
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
