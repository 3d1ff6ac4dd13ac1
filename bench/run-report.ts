// The bench harness's report: the tables, ratios and PASS/FAIL per target on stdout, and
// bench/results/latest.json and batch.md.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LoadSettings } from './load.js';
import { type CreateBench } from './segments.js';
import type { Options } from './run-args.js';
import { ROOT, natsWarnings, stopNotes } from './run-servers.js';
import { BATCH_SCENARIOS, BATCH_SIZE, isBatch, type ScenarioResult } from './run-measure.js';

export interface Skip { what: string; reason: string }


/**
 * The batch scenarios: prints their table, adds their targets to `targets` (issue 22) and answers
 * the markdown for bench/results/batch.md (undefined when no batch scenario was measured).
 */
export function batchSection(o: Options, s: LoadSettings, results: ScenarioResult[], targets: Target[], started: Date): string | undefined {
  const rs = results.filter((r) => isBatch(r.scenario));
  if (!rs.length) return undefined;
  const find = (server: string, scenario: string) => rs.find((r) => r.server === server && r.scenario === scenario);
  const f = (n: number | undefined, d = 0) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
  const cratio = (a?: ScenarioResult, b?: ScenarioResult) => (a?.callsPerS !== undefined && b?.callsPerS ? a.callsPerS / b.callsPerS : undefined);
  const base = (r: ScenarioResult) => (r.server === 'fastify-pg-batch' ? undefined : find('fastify-pg-batch', r.scenario));
  const statuses = (r: ScenarioResult) => Object.entries(r.load.callCodes ?? {}).sort().map(([k, v]) => `${k}x${v}`).join(' ') || '-';
  const head = ['server', 'scenario', 'req/s', 'calls/s', 'call fails', 'call statuses', 'CPU us/call srv', 'pg', 'nats', 'total', 'p50 ms', 'p99 ms', '> 1 s', '> 2 s', 'x baseline'];
  const rows = rs.map((r) => [r.server, r.run ? `${r.scenario} (run ${r.run})` : r.scenario, f(r.rps), f(r.callsPerS), String(r.callFailures ?? '-'), statuses(r),
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
  // The floor of each mode (bench/floor.ts on the same store): a target the floor misses is out of reach.
  for (const [server, label, min, floorName] of [['headwater-nats', 'nats+pg', 0.6, 'floor-nats-pg'], ['headwater-embedded', 'embedded', 0.5, 'floor-pglite']] as const) {
    // CPU per event is read against the floor that lands its events in ClickHouse too.
    const chFloorName = `${floorName}-ch`;
    const flch = find(chFloorName, 'batch20-users1000');
    const u = find(server, 'batch20-users1000');
    const b = find('fastify-pg-batch', 'batch20-users1000');
    const fl = find(floorName, 'batch20-users1000');
    const rb = cratio(u, b);
    const rf = cratio(fl, b);
    add(`${label}: batch-20, 1,000 users: calls/s vs Fastify+pg batch`, rb === undefined ? undefined :
      `${rb.toFixed(2)}x (${f(u!.callsPerS)} vs ${f(b!.callsPerS)})${rf !== undefined ? `; ${floorName} ${rf.toFixed(2)}x` : ''}`, `>= ${min}x`, rb === undefined ? undefined : rb >= min);
    const cpu = u?.cpuUsPerCall?.total;
    const fcpu = fl?.cpuUsPerCall?.total;
    const fchcpu = flch?.cpuUsPerCall?.total;
    const usOf = (x: number | undefined, name: string) => (x !== undefined && Number.isFinite(x) ? `; ${name} ${x.toFixed(1)} us` : '');
    add(`${label}: batch-20, 1,000 users: CPU per event, all processes`, cpu === undefined || !Number.isFinite(cpu) ? undefined :
      `${cpu.toFixed(1)} us (server ${f(u!.cpuUsPerCall!.server, 1)}${u!.cpuUsPerCall!.postgres !== undefined ? `, postgres ${f(u!.cpuUsPerCall!.postgres, 1)}` : ''}${u!.cpuUsPerCall!.nats !== undefined ? `, nats ${f(u!.cpuUsPerCall!.nats, 1)}` : ''})` +
      usOf(fchcpu, `${chFloorName} (with ClickHouse)`) + usOf(fcpu, `${floorName} (without)`),
      '<= 60 us', cpu === undefined ? undefined : cpu <= 60);
    const nu = cratio(find(server, 'batch20-newusers'), u);
    const fnu = cratio(find(floorName, 'batch20-newusers'), fl);
    add(`${label}: new userId per call vs 1,000 users`, nu === undefined ? undefined : `${nu.toFixed(2)}x${fnu !== undefined ? `; ${floorName} ${fnu.toFixed(2)}x` : ''}`,
      '>= 0.7x', nu === undefined ? undefined : nu >= 0.7);
    const rp = find(server, 'batch20-replay');
    const rr = cratio(rp, u);
    const replayed = rp?.load.callCodes ? `${rp.load.callCodes['200'] ?? 0} of ${Object.values(rp.load.callCodes).reduce((a, v) => a + v, 0)} calls answered 200 replay` : undefined;
    add(`${label}: replays vs 1,000 users`, rr === undefined ? undefined : `${rr.toFixed(2)}x${replayed ? ` (${replayed})` : ''}`, '>= 1x', rr === undefined ? undefined : rr >= 1);
    // Steady: every run of one scenario within 15 % of their median (--repeat 5).
    const runsOf = (name: string) => rs.filter((r) => r.server === name && r.scenario === 'batch20-users1000' && r.callsPerS !== undefined).map((r) => r.callsPerS!);
    const runs = runsOf(server);
    const st = stability(runs);
    const pct = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)} %`;
    const fruns = runsOf(floorName);
    const fst = fruns.length >= 5 ? stability(fruns) : undefined;
    add(`${label}: batch20-users1000: five runs within 15 % of their median`, runs.length < 5 ? (runs.length ? `${runs.length} run(s): run with --repeat 5` : undefined) :
      `${runs.map((x) => f(x)).join(', ')} calls/s; median ${f(st.median)}, furthest ${pct(st.furthestPct)}` +
      (fst ? `; ${floorName} ${fruns.map((x) => f(x)).join(', ')}, furthest ${pct(fst.furthestPct)}` : ''),
      'within +-15 %', runs.length < 5 ? undefined : Math.abs(st.furthestPct) <= 15);
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
  md.push('Floors: bench/floor.ts on each mode\'s store (floor-pglite, floor-nats-pg): uWS, every messageId with its event and a claim of each track call\'s identifier for a new profile, keyed by org and app with the indexes the contract\'s reads need (a profile\'s identifiers, an org\'s profiles, the answers naming a profile), one statement per gathered batch; no auth, governance, identity resolution, segments or ClickHouse. floor-pglite-ch and floor-nats-pg-ch (batch20-users1000): the same, then each new event landed in embedded ClickHouse (chDB: headwater\'s events table and insert, up to 5,000 events an insert) after the answer, as the contract\'s event reads need: the floor of the CPU per event target. A target the floor misses cannot be met on these stores.');
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

export interface Target { name: string; measured: string; wanted: string; pass: boolean | null }

/** The median of `xs` and how far (signed %, the larger side) the furthest value lies from it. */
function stability(xs: number[]): { median: number; furthestPct: number } {
  if (xs.length === 0) return { median: NaN, furthestPct: NaN };
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  let furthestPct = 0;
  for (const x of xs) { const d = ((x - median) / median) * 100; if (Math.abs(d) > Math.abs(furthestPct)) furthestPct = d; }
  return { median, furthestPct };
}

export const answeredAny = (r: ScenarioResult) => r.load.responses > 0;

/** The commit measured and whether the tree had local changes (read-only git commands). */
export function gitState(): { commit?: string; dirty?: string[] } {
  const rev = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const st = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' });
  return {
    commit: rev.status === 0 ? rev.stdout.trim() : undefined,
    dirty: st.status === 0 ? st.stdout.split('\n').map((l) => l.trim()).filter((l) => l && !l.endsWith('bench/results/latest.json')) : undefined,
  };
}

/** One headwater mode's soak: RSS at its first and last sample, descriptors at the start and the end
 * (all, embedded Postgres's own, and by kind). */
export interface Soak {
  server: string; firstMB: number; lastMB: number; changePct: number;
  fdsWarm?: number; fdsEnd?: number; fdDetail?: string; storeWarm?: number; storeEnd?: number;
}

export function report(o: Options, s: LoadSettings, started: Date, results: ScenarioResult[], skipped: Skip[],
  soaks: Soak[],
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
  // The write path's single-call target, read here on one pair of runs; `--pairs N` reads it on
  // the median of N alternated rounds (bench/pairs.ts), steadier on a noisy machine.
  ge('embedded: single track calls vs Fastify + pg single (one pair of runs; --pairs N for the median)', emb, fast, 1, 'fastify');
  ge('nats+pg: single track calls vs Fastify + pg single (one pair of runs; --pairs N for the median)', nats, fast, 1, 'fastify');
  ge('nats+pg: identify-heavy calls/s vs raw uWS', natsId, raw, 0.15, 'raw');
  for (const k of ['headwater-embedded', 'headwater-nats']) {
    const sk = soaks.find((x) => x.server === k);
    targets.push({ name: `${k}: memory flat over the soak`, measured: sk ? `${sk.firstMB.toFixed(0)} -> ${sk.lastMB.toFixed(0)} MB (${sk.changePct >= 0 ? '+' : ''}${sk.changePct.toFixed(1)} %)` : (o.soak ? 'not measured' : 'not measured (run with --soak)'), wanted: 'within 10 %', pass: sk ? Math.abs(sk.changePct) <= 10 : null });
    // Embedded Postgres's own files follow the store, in its bounded cache (procstat.ts STORE_FILE): not counted.
    const store = sk ? Math.max(0, (sk.storeEnd ?? 0) - (sk.storeWarm ?? 0)) : 0;
    targets.push({ name: `${k}: no growth in open handles (fds) over the soak`, measured: sk ? `${sk.fdsWarm ?? '-'} -> ${sk.fdsEnd ?? '-'}${sk.fdDetail ? ` (${sk.fdDetail})` : ''}${store > 0 ? `; ${store} more of embedded Postgres's own files not counted` : ''}` : (o.soak ? 'not measured' : 'not measured (run with --soak)'), wanted: '<= +2', pass: sk && sk.fdsWarm !== undefined && sk.fdsEnd !== undefined ? sk.fdsEnd - sk.fdsWarm - store <= 2 : null });
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
    floorInfo('floor on PGlite (embedded track\'s floor)', floorLite, emb, 0.30, raw, 'raw'),
    floorInfo('floor on Postgres, no stream', floorPg, undefined, 0.25, raw, 'raw'),
    floorInfo('floor on JetStream + Postgres (NATS track\'s floor)', floorNats, nats, 0.25, raw, 'raw'),
    floorInfo('floor on JetStream + Postgres vs Fastify', floorNats, undefined, 3, fast, 'fastify'),
    floorInfo('floor of headwater\'s shape on JetStream + Postgres (a Piscina hop per batch, events in ClickHouse) vs Fastify (the single track target\'s floor)',
      find('floor-nats-pg-ch-piscina', 'track'), nats, 1, fast, 'fastify'),
    floorInfo('floor on PGlite with 50 segments vs without (the segments target\'s floor embedded)', find('floor-pglite-seg', 'track'), find('headwater-embedded', 'segments'), 0.8, floorLite, 'floor-pglite track'),
    floorInfo('floor on JetStream + Postgres with 50 segments vs without (the segments target\'s floor on NATS)', find('floor-nats-pg-seg', 'track'), find('headwater-nats', 'segments'), 0.8, floorNats, 'floor-nats-pg track'),
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
