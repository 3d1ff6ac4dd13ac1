// Journey runtime figures (`npm run bench -- --journeys`, or `node dist/bench/executions.js`):
//   idle     N executions (default 10,000) sleeping at once: the server's CPU over an idle window
//            (% of one core), then how late each resumes after its deadline (deadlines spread over
//            a window, as real sleeps are)
//   load     track calls where every event triggers a three-call journey (profile.get, traits.set,
//            events.track): executions completed per second, and ingest throughput beside it as a
//            ratio to the same load with the journey disabled; then a trivial journey (one
//            traits.set): the server's CPU per execution beyond its triggering track call
//   sandbox  CPU of one trivial activation (bench/runtime.ts, in-process)
// The server is `node bin/headwater.js serve`, a child process: embedded stores, or PostgreSQL + NATS
// when DATABASE_URL and NATS_URL are set. Flags: --idle N, --spread-s S, --load N, --skip-idle,
// --idle-only (neither the sandbox figures nor the load), --first-s S (seconds to the first deadline).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { build } from 'esbuild';
import { create as tarCreate } from 'tar';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { arg } from './args.js';
import { cpuBetween, cpuOfNamed, cpuSeconds, memory, ticksPerSecond } from './procstat.js';
import { readFileSync, readdirSync } from 'node:fs';
import { ROOT, spawnServe } from './child.js';
import { drain } from './run-servers.js';
import { SDK_FILE, sdkPlugin } from '../cli/project/index.js';

const IDLE = Number(arg('--idle', '10000'));
const SPREAD_S = Number(arg('--spread-s', '60'));
/** Seconds from seeding to the first deadline: default 25 ms per execution, at least 60 s (more on a loaded machine). */
const FIRST_S = Number(arg('--first-s', '0'));
/**
 * Tracked events of the load phases. The rate counts from the first call to the last execution's
 * end, so the ramp-up (events land, triggers match) and the tail (ended() looks every 250 ms) are a
 * fixed second or so: 5,000 executions at ~800/s read 693-775/s where 15,000 read 991/s (same
 * server, PostgreSQL + NATS).
 */
const LOAD = Number(arg('--load', '15000'));
const SKIP_IDLE = process.argv.includes('--skip-idle');
const IDLE_ONLY = process.argv.includes('--idle-only');

/** CPU seconds per thread name of a process (threads of one name summed). */
function threadSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const comm = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
        // Worker threads are all called "node": told apart by thread id, the main thread by name.
        const name = Number(tid) === pid ? 'main' : comm === 'node' ? `thread ${tid}` : comm;
        const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
        out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / ticksPerSecond());
      } catch { /* the thread ended */ }
    }
  } catch { /* the process ended */ }
  return out;
}
/** The threads that used CPU between two readings, as '% of a core' per name, largest first. */
function threadShares(a: Map<string, number>, b: Map<string, number>, seconds: number): string {
  return [...b].map(([k, v]) => [k, ((v - (a.get(k) ?? 0)) / seconds) * 100] as const).filter(([, p]) => p > 0)
    .sort((x, y) => y[1] - x[1]).slice(0, 6).map(([k, p]) => `${k} ${p.toFixed(2)}`).join(', ');
}
const mode = process.env.DATABASE_URL && process.env.NATS_URL ? 'postgres+nats' : 'embedded';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** CPU of the store servers' processes (PostgreSQL backends and nats-server), for cpuBetween. */
const storesCpu = () => cpuOfNamed(['postgres', 'nats-server']);

const startServer = () => spawnServe({ nodeArgs: (process.env.HEADWATER_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean) });

async function api(url: string, method: string, path: string, token: string, body?: unknown) {
  const r = await fetch(url + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : undefined;
}

async function bundleOf(source: string): Promise<Buffer> {
  const out = await build({
    stdin: { contents: source, loader: 'js', resolveDir: ROOT }, bundle: true, format: 'esm', platform: 'neutral', target: 'es2020', write: false, logLevel: 'silent',
    plugins: [sdkPlugin(SDK_FILE)],
  });
  return Buffer.from(out.outputFiles[0]!.contents);
}

async function put(url: string, token: string, bytes: Buffer, kind: string) {
  const digest = sha(bytes);
  const r = await fetch(`${url}/v1/artifacts/${digest}?kind=${kind}`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' }, body: bytes as unknown as BodyInit });
  if (r.status >= 300) throw new Error(`PUT artifact: ${r.status} ${await r.text()}`);
  return digest;
}

interface Org { admin: string; apiKey: string; orgId: string; appId: string; sourceId: string }

async function setup(url: string, token: string, journeys: Array<{ key: string; event: string; body: string }>): Promise<Org> {
  const created = await api(url, 'POST', '/v1/orgs', token, { data: { name: `bench-${randomBytes(3).toString('hex')}` } });
  const admin: string = created.data.sessions.admin;
  const app = await api(url, 'POST', '/v1/apps', admin, { data: { name: 'bench' } });
  const sources = await api(url, 'GET', `/v1/apps/${app.data.id}/sources`, admin);
  const dir = mkdtempSync(join(tmpdir(), 'hw-bench-src-'));
  writeFileSync(join(dir, 'headwater.json'), '{}');
  const parts: Buffer[] = [];
  for await (const c of tarCreate({ gzip: true, cwd: dir, portable: true }, ['headwater.json']) as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
  rmSync(dir, { recursive: true, force: true });
  const source = await put(url, admin, Buffer.concat(parts), 'source');
  const entries = [];
  for (const j of journeys) {
    const code = `import { journey } from 'headwater/sdk';\nexport default journey({ key: '${j.key}', trigger: { event: '${j.event}' }, purpose: 'bench' }, async (ctx) => {\n${j.body}\n});`;
    entries.push({ key: j.key, trigger: { event: j.event }, purpose: 'bench', spine: [], bundle: await put(url, admin, await bundleOf(code), 'bundle') });
  }
  const p = await api(url, 'POST', '/v1/pushes', admin, { data: { appId: app.data.id, orgId: created.data.org.id, manifest: { protocol: 3, sdk: 'headwater/sdk@0.1.0', journeys: entries, templates: [], source } } });
  for (;;) {
    const x = await api(url, 'GET', `/v1/pushes/${p.data.id}`, admin);
    if (x.data.compiledEntries === x.data.totalEntries) break;
    await sleep(100);
  }
  for (const j of journeys) await api(url, 'PATCH', `/v1/journeys/${j.key}`, admin, { data: { enabled: true } });
  return { admin, apiKey: created.data.apiKey, orgId: created.data.org.id, appId: app.data.id, sourceId: sources.data[0].id };
}

/** Sends `calls` through /v1/batch, 500 per request, `width` requests at once; answers the seconds taken. */
async function batch(url: string, org: Org, calls: unknown[], width = 4): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const chunks: unknown[][] = [];
  for (let i = 0; i < calls.length; i += 500) chunks.push(calls.slice(i, i + 500));
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < chunks.length) {
      const chunk = chunks[next++];
      let r;
      // Ingestion answers 503 when it is behind (a loaded machine): wait as it says and send again.
      for (;;) {
        try { r = await api(url, 'POST', '/v1/batch', org.apiKey, { data: { sourceId: org.sourceId, calls: chunk } }); break; } catch (e) {
          if (!/: 503 /.test(String(e))) throw e;
          await sleep(1000);
        }
      }
      const bad = r.data.find((x: any) => x.status >= 300);
      if (bad) throw new Error(`batch call refused: ${JSON.stringify(bad)}`);
    }
  }));
  return (performance.now() - t0) / 1000;
}

const identifies = (tag: string, n: number) => Array.from({ length: n }, (_, i) => ({ type: 'identify', identifiers: { userId: `${tag}-${i}` }, traits: { consent: { bench: true } } }));
const tracks = (tag: string, n: number, event: string, props: (i: number) => Record<string, unknown> = () => ({})) =>
  Array.from({ length: n }, (_, i) => ({ type: 'track', identifiers: { userId: `${tag}-${i}` }, event, properties: props(i), messageId: `${tag}-${event}-${i}` }));

/** Whether any execution of the journey is still running or waiting (two one-row reads). */
async function busy(url: string, org: Org, journey: string): Promise<boolean> {
  for (const status of ['running', 'waiting']) {
    const r = await api(url, 'GET', `/v1/executions?journey=${journey}&status=${status}&limit=1`, org.admin);
    if (r.data.length) return true;
  }
  return false;
}

/**
 * Waits until `n` executions of the org's journey have ended (completed or failed). Polled cheaply
 * (paging through thousands of executions would load the store it measures), and counted only once
 * none runs or waits. With NATS the triggering events land in ClickHouse up to a second after their
 * answers, so "none busy" can come before the executions start. `end` is when none was busy.
 */
async function ended(url: string, org: Org, n: number, t0: number): Promise<{ end: number; done: number; failed: number }> {
  for (;;) {
    await sleep(250);
    if (await busy(url, org, 'three')) continue;
    const end = performance.now();
    const done = await count(url, org, 'three', 'completed');
    const failed = await count(url, org, 'three', 'failed');
    if (done + failed >= n || end - t0 > 900_000) return { end, done, failed };
  }
}

/** Counts executions of a journey in a status (pages of 100; stops at `max`). */
async function count(url: string, org: Org, journey: string, status: string, max = Infinity): Promise<number> {
  let n = 0;
  let cursor = '';
  for (;;) {
    const r = await api(url, 'GET', `/v1/executions?journey=${journey}&status=${status}&limit=100${cursor ? `&cursor=${cursor}` : ''}`, org.admin);
    n += r.data.length;
    if (!r.meta.hasMore || n >= max) return n;
    cursor = r.meta.nextCursor;
  }
}

/**
 * The idle CPU windows: a 15 s window swung between 0.2 % and 1.4 % on an idle embedded server
 * (one-time bursts: a quiet pool's collection, the store's own maintenance, chDB merges), so 40 s.
 */
const WINDOW_MS = 40_000;

async function idle() {
  const srv = await startServer();
  try {
    const org = await setup(srv.url, srv.token, [{ key: 'idle', event: 'idle_go', body: `await ctx.sleep(ctx.event.properties.ms); await ctx.traits.set('woke', true);` }]);
    // The process's own idle CPU first (embedded: chDB's and PGlite's background work), so the
    // waiting executions' share can be told apart from it. The journey threads start with the first
    // activation: one execution first, so the base is a server that runs this journey, idle (its
    // threads' memory is not counted as what the waiting executions add), and 60 s for start-up
    // work to end: V8 optimizing WebAssembly in the background, the store's own maintenance, and
    // each isolate's memory reducer, which shrinks a heap with a few full collections 35-50 s after
    // its last busy spell (the PGlite thread's took ~60 ms of CPU; a window that began 30 s after
    // the setup read 0.60-0.67 %, one that began 90 s after it 0.23 %).
    await batch(srv.url, org, identifies('w', 1));
    await batch(srv.url, org, tracks('w', 1, 'idle_go', () => ({ ms: 1 })));
    while (await count(srv.url, org, 'idle', 'completed') < 1) await sleep(250);
    await sleep(60_000);
    const b0 = cpuSeconds(srv.pid)!;
    const bt = threadSeconds(srv.pid);
    const bw = performance.now();
    await sleep(WINDOW_MS);
    const bs = (performance.now() - bw) / 1000;
    const basePct = ((cpuSeconds(srv.pid)! - b0) / bs) * 100;
    const rss0 = memory(srv.pid)?.rssMB ?? NaN;
    console.log(`idle: server CPU over ${bs.toFixed(0)} s with nothing waiting: ${basePct.toFixed(2)} % of one core (${threadShares(bt, threadSeconds(srv.pid), bs)}); RSS ${rss0.toFixed(0)} MB`);
    await batch(srv.url, org, identifies('i', IDLE));
    // Deadlines spread over SPREAD_S seconds, starting after the seeding is expected to be done.
    const base = FIRST_S > 0 ? FIRST_S * 1000 : Math.max(60_000, IDLE * 25);
    const t0 = performance.now();
    await batch(srv.url, org, tracks('i', IDLE, 'idle_go', (i) => ({ ms: base + Math.floor((i / IDLE) * SPREAD_S * 1000) })));
    for (;;) {
      const waiting = await count(srv.url, org, 'idle', 'waiting');
      if (waiting >= IDLE) break;
      if (performance.now() - t0 > base - 20_000) throw new Error(`only ${waiting} of ${IDLE} waiting before the first deadline`);
      await sleep(1000);
    }
    console.log(`idle: ${IDLE} executions waiting after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // Each sampled execution's own deadline, read while it waits (timerDeadline), to compare with
    // its endedAt once it resumed: the activation queue at seeding does not count as lateness.
    const deadlines = new Map<string, number>();
    let cur = '';
    while (deadlines.size < 500) {
      const r = await api(srv.url, 'GET', `/v1/executions?journey=idle&status=waiting&limit=100${cur ? `&cursor=${cur}` : ''}`, org.admin);
      for (const x of r.data) deadlines.set(x.id, Date.parse(x.timerDeadline));
      if (!r.meta.hasMore) break;
      cur = r.meta.nextCursor;
    }
    // The window starts after the seeding burst's garbage is given back: the worker threads'
    // collections 5 s and 10 s after their last task (pipeline/quiet-collect.ts), and the main
    // thread's own (V8 shrinks its heap within about a minute; a window 15 s after the seeding read
    // 0.6 % of the main thread, against 0.3 % idle). It measures what waiting executions cost.
    await sleep(60_000);
    const c0 = cpuSeconds(srv.pid)!;
    const ct = threadSeconds(srv.pid);
    const w0 = performance.now();
    const windowMs = Math.min(WINDOW_MS, base - (performance.now() - t0) - 5_000);
    await sleep(windowMs);
    const ws = (performance.now() - w0) / 1000;
    const idlePct = ((cpuSeconds(srv.pid)! - c0) / ws) * 100;
    const rss1 = memory(srv.pid)?.rssMB ?? NaN;
    console.log(`idle: server CPU over ${(windowMs / 1000).toFixed(0)} s with ${IDLE} waiting: ${idlePct.toFixed(2)} % of one core (${threadShares(ct, threadSeconds(srv.pid), ws)}); ${(idlePct - basePct).toFixed(2)} points above the idle process (goal < 1 %)`);
    console.log(`idle: RSS ${rss1.toFixed(0)} MB with ${IDLE} waiting, ${(rss1 - rss0).toFixed(0)} MB above the idle process (goal < 200 MB)`);
    while (await busy(srv.url, org, 'idle')) await sleep(1000);
    // endedAt - the deadline: the resume, its activation and the trait write.
    const lateness: number[] = [];
    for (const [id, deadline] of deadlines) {
      const d = await api(srv.url, 'GET', `/v1/executions/${id}`, org.admin);
      lateness.push(Date.parse(d.data.endedAt) - deadline);
    }
    lateness.sort((a, b) => a - b);
    const q = (p: number) => lateness[Math.min(lateness.length - 1, Math.floor(p * lateness.length))]!;
    console.log(`idle: resume lateness (endedAt - timerDeadline), ${lateness.length} sampled: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${lateness[lateness.length - 1]} ms; within 1 s: ${lateness.filter((v) => v <= 1000).length}/${lateness.length}`);
    return { idlePct, basePct, rssAddedMB: rss1 - rss0, p50: q(0.5), p99: q(0.99), max: lateness[lateness.length - 1]! };
  } finally { await srv.close(); }
}

async function load() {
  const srv = await startServer();
  try {
    const body = `const me = await ctx.profile.get(); await ctx.traits.set('seen', me.id); await ctx.events.track('welcomed', {});`;
    const on = await setup(srv.url, srv.token, [{ key: 'three', event: 'load_go', body }]);
    await batch(srv.url, on, identifies('on', LOAD));
    // The same load into an org whose journey is disabled (and the same profiles' shape).
    const off = await setup(srv.url, srv.token, [{ key: 'three', event: 'load_go', body }]);
    await api(srv.url, 'PATCH', '/v1/journeys/three', off.admin, { data: { enabled: false } });
    await batch(srv.url, off, identifies('off', LOAD));
    // Untimed warm-up of the track path (JIT, caches), then the disabled org's load, then the enabled one.
    await batch(srv.url, off, tracks('off', Math.min(500, LOAD), 'warm_up'));
    // And of the journey path, in an org of its own: a fresh server's first executions start its
    // journey threads, load a sandbox per activation slot and run QuickJS before V8 optimized it
    // (the cold start is the sandbox figures' "first 500"); a server that runs journeys is past it.
    const warm = await setup(srv.url, srv.token, [{ key: 'three', event: 'load_go', body }]);
    const nWarm = Math.min(1000, LOAD);
    await batch(srv.url, warm, identifies('warm', nWarm));
    await batch(srv.url, warm, tracks('warm', nWarm, 'load_go'));
    await ended(srv.url, warm, nWarm, performance.now());
    const offCpu0 = cpuSeconds(srv.pid)!;
    const offStores0 = storesCpu();
    const offS = await batch(srv.url, off, tracks('off', LOAD, 'load_go'));
    // Its events land after the answers (ClickHouse, segments): until a sentinel event sent after
    // them is listed, so the landing's CPU counts as the journey-on figure's does.
    const drained = await drain(srv.url, { ...off, frontEnd: '' }, Date.now());
    if (drained.drainS === undefined) throw new Error(`the journey-off load did not land: ${drained.sentinel}`);
    const offCallMs = (cpuSeconds(srv.pid)! - offCpu0) * 1000 / LOAD;
    const offStoresMs = cpuBetween(offStores0, storesCpu()) * 1000 / LOAD;
    const t0 = performance.now();
    const cpu0 = cpuSeconds(srv.pid)!;
    const stores0 = storesCpu();
    const onS = await batch(srv.url, on, tracks('on', LOAD, 'load_go'));
    const { end, done, failed } = await ended(srv.url, on, LOAD, t0);
    const serveMs = (cpuSeconds(srv.pid)! - cpu0) * 1000;
    const storesMs = cpuBetween(stores0, storesCpu()) * 1000;
    const totalS = (end - t0) / 1000;
    const offRate = LOAD / offS;
    const onRate = LOAD / onS;
    console.log(`load: ingest ${onRate.toFixed(0)} calls/s with the journey on, ${offRate.toFixed(0)} calls/s off: ratio ${(onRate / offRate).toFixed(2)}`);
    console.log(`load: ${done} executions completed (${failed} failed) in ${totalS.toFixed(1)} s from the first call: ${(done / totalS).toFixed(0)} executions/s (goal >= ${mode === 'embedded' ? 500 : 800}/s)`);
    console.log(`load: CPU per execution, its triggering track call included: server ${(serveMs / LOAD).toFixed(2)} ms` +
      (mode !== 'embedded' ? `, postgres + nats-server ${(storesMs / LOAD).toFixed(2)} ms` : ''));
    // A trivial execution (one ctx.traits.set): what the server spends on it beyond its triggering
    // track call (trigger, claim, activation, its write through the ingestion path, save), as the
    // same server's CPU per call with the journey on minus with it off.
    const triv = await setup(srv.url, srv.token, [{ key: 'three', event: 'load_go', body: `await ctx.traits.set('seen', true);` }]);
    await batch(srv.url, triv, identifies('triv', LOAD));
    const tw = Math.min(1000, LOAD);
    await batch(srv.url, triv, identifies('trivw', tw));
    await batch(srv.url, triv, tracks('trivw', tw, 'load_go'));
    await ended(srv.url, triv, tw, performance.now());
    const trivCpu0 = cpuSeconds(srv.pid)!;
    const trivThreads0 = threadSeconds(srv.pid);
    const trivStores0 = storesCpu();
    const tt0 = performance.now();
    await batch(srv.url, triv, tracks('triv', LOAD, 'load_go'));
    const te = await ended(srv.url, triv, LOAD + tw, tt0);
    const trivCallMs = (cpuSeconds(srv.pid)! - trivCpu0) * 1000 / LOAD;
    const trivStoresMs = cpuBetween(trivStores0, storesCpu()) * 1000 / LOAD;
    const trivialMs = trivCallMs - offCallMs;
    const trivThreads = [...threadSeconds(srv.pid)].map(([k, v]) => [k, (v - (trivThreads0.get(k) ?? 0)) * 1000 / LOAD] as const)
      .filter(([, ms]) => ms >= 0.01).sort((x, y) => y[1] - x[1]).slice(0, 6).map(([k, ms]) => `${k} ${ms.toFixed(2)}`).join(', ');
    console.log(`load: trivial execution (one traits.set), ${te.done - tw} completed at ${((te.done - tw) / ((te.end - tt0) / 1000)).toFixed(0)}/s: server CPU ${trivCallMs.toFixed(2)} ms per execution with its track call, ` +
      `${offCallMs.toFixed(2)} ms per track call with the journey off: ${trivialMs.toFixed(2)} ms for the execution (goal <= 2 ms)` +
      (mode !== 'embedded' ? `; postgres + nats-server ${(trivStoresMs - offStoresMs).toFixed(2)} ms more` : '') + ` (ms per execution by thread: ${trivThreads})`);
    return { onRate, offRate, execPerS: done / totalS, failed, serverMsPerExec: serveMs / LOAD, storesMsPerExec: storesMs / LOAD, trivialMs };
  } finally { await srv.close(); }
}

async function main() {
  console.log(`journey runtime bench, ${mode}`);
  if (!IDLE_ONLY) {
    const sandbox = spawn(process.execPath, [fileURLToPath(new URL('./runtime.js', import.meta.url)), '--n', '200'], { stdio: 'inherit' });
    await new Promise((r) => sandbox.once('exit', r));
  }
  const l = IDLE_ONLY ? undefined : await load();
  const i = SKIP_IDLE ? undefined : await idle();
  console.log(JSON.stringify({ mode, load: l, idle: i }));
}

await main();
