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
// go to bench/results/latest.json and bench/results/batch.md. When the Postgres server has
// pg_stat_statements loaded, each batch scenario on Postgres also lists its longest statements
// (bench/pg-statements.ts; headwater's own databases count statements inside functions too).
// --batch runs the batch scenarios alone (with --only fastify,embedded,nats); --no-batch leaves
// them out of a full run; --repeat N runs batch20-users1000 N times per headwater mode and floor (the
// stability target wants five runs within 15 % of their median).
//
// --journeys runs bench/executions.ts (the journey runtime) instead of all this; --pairs N runs
// bench/pairs.ts (single track calls, Fastify + pg and headwater alternated N rounds).
// Flags: --quick (10 s per scenario after a 3 s warm-up), --soak (adds a 5-minute track run per
// headwater mode, RSS sampled every 10 s), --only raw,fastify,floor,embedded,nats, --connections N,
// --threads N (wrk threads), --duration S, --warmup S, --soak-seconds S, --soak-warmup S, --users N,
// --loadgen wrk|autocannon, --private-nats (NATS mode against a nats-server started for the run instead of
// NATS_URL: headwater's stream names are fixed, so other headwater processes on a shared NATS server pull
// the bench's calls), --segments (adds, per headwater mode, track load in an org with 50 segments, and
// in Postgres mode the time to create a segment over 100,000 existing profiles).
// HEADWATER_BENCH_NODE_ARGS passes Node flags to the headwater servers alone (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
//
// This file holds the runs; baselines.ts the servers measured beside headwater, run-args.ts the
// flags, run-servers.ts the child processes and fixtures, run-measure.ts one measured scenario,
// run-report.ts the report.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { findWrk, type LoadSettings } from './load.js';
import { defineSegments, segmentCreateBench, type CreateBench } from './segments.js';
import { parseArgs, USAGE } from './run-args.js';
import {
  http, killAllSync, killChild, natsWarnings, reachable, serverEnv, sharedStreamPullers, startHeadwater,
  startPrivateNats, stopServer, headwaterFixture, type Fixture, type Server,
} from './run-servers.js';
import {
  BATCH_SCENARIOS, batchShape, isBatch, kinds, line, measure, natsPids, pgDatabases, replaySource, type Scenario, type ScenarioResult,
} from './run-measure.js';
import { gitState, report, type Skip, type Soak } from './run-report.js';
import { benchDatabase } from './child.js';
import { openStatements, type Statements } from './pg-statements.js';
import { BASELINES, startBaseline } from './baselines.js';


async function main() {
  // `npm run bench -- --journeys`: the journey runtime's figures (bench/executions.ts) alone.
  if (process.argv.includes('--journeys')) { await import('./executions.js'); return; }
  let o: ReturnType<typeof parseArgs>;
  try { o = parseArgs(process.argv.slice(2)); } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message} (--help lists the flags)\n`);
    process.exit(2);
  }
  if (o.help) { process.stdout.write(USAGE + '\n'); return; }
  if (o.pairs > 0) {
    try { await (await import('./pairs.js')).runPairs(o); } catch (err) {
      process.stderr.write(`bench --pairs: ${(err as Error).message.split('\n')[0]}\n`);
      process.exit(1);
    }
    return;
  }
  const want = (k: string) => !o.only || o.only.has(k);
  const wantScenario = (s: string) => !o.scenarios || o.scenarios.has(s);
  const settings: LoadSettings = { connections: o.connections, threads: Math.min(o.threads, o.connections), durationS: o.durationS, timeoutS: 10 };
  const tmp = mkdtempSync(join(tmpdir(), 'hw-bench-'));
  const results: ScenarioResult[] = [];
  const skipped: Skip[] = [];
  const soaks: Array<Soak & { result: ScenarioResult }> = [];
  const dbUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
  const natsUrl = process.env.NATS_URL || 'nats://127.0.0.1:4222';
  const started = new Date();
  let benchDb: Awaited<ReturnType<typeof benchDatabase>> | undefined;
  let statements: Statements | undefined;
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
        natsPids.push(priv.child.pid!);
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

  const baseEnv = serverEnv();

  try {
    const single = o.batch !== 'only'; // the single-call scenarios (not with --batch)
    const pgU = new URL(dbUrl);
    const pgUp = await reachable(pgU.hostname, Number(pgU.port || 5432));
    pgDatabases.push(decodeURIComponent(pgU.pathname.replace(/^\//, '')) || 'postgres');
    // Postgres statement by statement in the batch and segment scenarios, when the server can say.
    const st = pgUp && (o.batch !== 'off' || o.segments) ? await openStatements(dbUrl) : {};
    if (st.reason) process.stdout.write(`  (Postgres statements not itemized: ${st.reason})\n`);
    statements = st.statements;
    const itemized = (uses: boolean) => (uses && statements ? { s: statements, databases: pgDatabases } : undefined);

    // ---- the baselines, in BASELINES' order
    for (const b of BASELINES) {
      const runBatch = (b.batch || b.batchToo) && o.batch !== 'off';
      const runSingle = !b.batch && single && (!b.segmentsOnly || o.segments);
      if (!want(b.only) || (!runBatch && !runSingle)) continue;
      if (b.pg && !pgUp) {
        skipped.push({ what: b.name, reason: `Postgres not reachable at ${pgU.hostname}:${pgU.port || 5432} (DATABASE_URL)` });
        continue;
      }
      const env: NodeJS.ProcessEnv = b.name === 'raw-uws' ? baseEnv : { ...baseEnv, DATABASE_URL: dbUrl };
      if (b.nats) {
        const nU = new URL(await chooseNats());
        if (!await reachable(nU.hostname, Number(nU.port || 4222))) { skipped.push({ what: b.name, reason: `NATS not reachable (${nU.host})` }); continue; }
        env.NATS_URL = nU.toString();
      }
      process.stdout.write(`${b.name}: starting\n`);
      try {
        const srv = await startBaseline(b, env);
        try {
          const target = { url: srv.url, sourceId: 'src_bench' };
          if (runSingle) {
            for (const kind of b.kinds.filter(wantScenario)) {
              const r = await measure(o, srv, { ...target, kind }, settings, tmp, { warmupS: o.warmupS, scenario: kind });
              results.push(r); process.stdout.write(line(r) + '\n');
            }
          }
          if (runBatch) {
            let replayOf: { runId: string; batches: number } | undefined;
            let repeatFloor: (() => Promise<ScenarioResult>) | undefined;
            for (const sc of BATCH_SCENARIOS.filter(wantScenario).filter((x) => !b.batchOnly || b.batchOnly.includes(x))) {
              const batch = batchShape(sc, replayOf);
              if (!batch) { skipped.push({ what: `${b.name}/${sc}`, reason: 'nothing to replay (batch20-users1000 not measured)' }); continue; }
              const measureBatch = () => measure(o, srv, { ...target, kind: 'batch', batch }, settings, tmp, { warmupS: o.warmupS, scenario: sc, uses: { pg: !!b.pg, nats: !!b.nats }, statements: itemized(!!b.pg) });
              const r = await measureBatch();
              results.push(r); process.stdout.write(line(r) + '\n');
              if (sc !== 'batch20-users1000') continue;
              replayOf = replaySource(r, settings);
              if (b.batchToo && !b.batchOnly) repeatFloor = measureBatch;
            }
            // --repeat on a floor too, after its other scenarios (as for headwater below): how
            // much its own runs move (the stability target's floor).
            for (let k = 2; k <= o.repeat && repeatFloor; k++) {
              const x = await repeatFloor();
              x.run = k;
              results.push(x); process.stdout.write(line(x) + '\n');
            }
          }
        } finally { await stopServer(srv); }
      } catch (err) { skipped.push({ what: b.name, reason: `failed: ${(err as Error).message}` }); process.stdout.write(`${b.name}: failed: ${(err as Error).message}\n`); }
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
        try {
          benchDb = await benchDatabase(dbUrl);
          pgDatabases.push(benchDb.name);
          // Optional: without it the functions' inner statements are not itemized.
          await statements?.trackAll(benchDb.name).catch((err: Error) => process.stdout.write(`  (statements inside functions not itemized: ${err.message})\n`));
          env.DATABASE_URL = benchDb.url;
        } catch (err) {
          process.stdout.write(`  (cannot create a bench database: ${(err as Error).message}; using ${dbUrl} as given)\n`);
          env.DATABASE_URL = dbUrl;
        }
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
        process.stdout.write(`${mode.name}: starting\n`);
        const tStart = Date.now();
        let srv: Server | undefined;
        try {
          const { srv: up, operatorToken } = await startHeadwater(mode.name, env, dataDir);
          srv = up;
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
        ].filter(wantScenario);
        // The replay re-sends batch20-users1000's bodies to the same process (same org and store).
        let replayOf: { runId: string; batches: number; pid: number } | undefined;
        /** --repeat: batch20-users1000 again on the process that measured it first, after the other scenarios. */
        let again: { measure: () => Promise<ScenarioResult>; pid: number; frontEnd: Fixture['frontEnd'] } | undefined;
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
              r = await measure(o, run.srv, { url: run.srv.url, apiKey: fx.apiKey, sourceId: fx.sourceId, kind: 'track' }, settings, tmp,
                { warmupS: o.warmupS, scenario, fixture: fx, uses: { pg: mode.key === 'nats', nats: mode.key === 'nats' }, statements: itemized(mode.key === 'nats') });
            } else if (isBatch(scenario)) {
              const batch = batchShape(scenario, replayOf)!;
              const { srv, fx } = run;
              const measureBatch = () => measure(o, srv, { ...target, kind: 'batch', batch }, settings, tmp,
                { warmupS: o.warmupS, scenario, fixture: fx, uses: { pg: mode.key === 'nats', nats: mode.key === 'nats' }, statements: itemized(mode.key === 'nats') });
              r = await measureBatch();
              if (scenario === 'batch20-users1000') {
                const src = replaySource(r, settings); replayOf = src ? { ...src, pid: srv.pid } : undefined;
                again = { measure: measureBatch, pid: srv.pid, frontEnd: fx.frontEnd };
              }
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
                fdDetail: r.fdKinds?.before && r.fdKinds.after ? kinds(r.fdKinds.before, r.fdKinds.after) : undefined,
                storeWarm: r.fdKinds?.before?.store, storeEnd: r.fdKinds?.after?.store });
              process.stdout.write(`  RSS samples (s:MB): ${pts.map((p) => `${p.t}:${p.rssMB.toFixed(0)}`).join(' ')}\n`);
              // Which files the descriptor count's change is made of (a leak repeats one kind of file).
              if (r.fdFiles) process.stdout.write(`  files opened over the soak: ${r.fdFiles.opened.join(' ') || 'none'}; closed: ${r.fdFiles.closed.join(' ') || 'none'}\n`);
            }
          }
          if (stalled(r)) {
            const tail = run.srv.stderrTail().trim().split('\n').slice(-3).map((l) => l.slice(0, 300)).join('\n    ');
            process.stdout.write(`${mode.name}: stalled during ${scenario}; replacing the process for the next scenario\n    server stderr: ${tail || '(empty)'}\n`);
            r.note = `${r.note ?? 'no answers'}; server process replaced afterwards`;
            await retire(run); run = undefined;
          }
        }
        // --repeat: the same scenario again on the same process, fresh messageIds each run (the
        // stability target: five runs within 15 % of their median). After the other scenarios, so
        // that those (and their ratios to the first run) meet the store as a run without --repeat does.
        for (let k = 2; k <= o.repeat && again && run?.srv.pid === again.pid; k++) {
          try {
            const x = await again.measure();
            x.run = k;
            x.frontEnd = again.frontEnd;
            results.push(x); process.stdout.write(line(x) + '\n');
          } catch (err) {
            skipped.push({ what: `${mode.name}/batch20-users1000 (run ${k})`, reason: `failed: ${(err as Error).message}` });
            break;
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
    await statements?.close().catch(() => {});
    if (benchDb) {
      await benchDb.drop().catch((err: Error) => process.stdout.write(`  (could not drop ${benchDb!.name}: ${err.message})\n`));
    }
    rmSync(tmp, { recursive: true, force: true });
  }

  report(o, settings, started, results, skipped, soaks, createBench);
}


main().then(() => process.exit(0), (err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  killAllSync();
  process.exit(1);
});
