// The storm of issue 21 (helpers/storm.ts), N times in a row on one topology started once:
//
//   node dist/test/storm-loop.js --runs 30 --topology embedded|serve|serve+worker
//        [--calls 6000] [--seed S] [--burn] [--settle-ms 30000] [--threads N] [--json FILE]
//
// embedded: the service in this process on the embedded stores (as test/storm.test.ts without
// servers); serve: `headwater serve` as a child process (on Postgres + NATS when DATABASE_URL and
// NATS_URL are set, embedded otherwise); serve+worker: serve + one `headwater worker`, children on
// DATABASE_URL and NATS_URL. Every run gets its own org; its seed is printed (--seed S: runs use
// S, S+1, ...). --burn runs a CPU burner child process (a busy loop) throughout. One line per run,
// then a summary; exit status 1 when any run found a violation.
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { runStorm, type StormReport } from './helpers/storm.js';
import { serversFromEnv, startTopology, type TopologyKind } from './helpers/topology.js';

function args(argv: string[]) {
  const o: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) o[a.slice(2)] = true;
    else { o[a.slice(2)] = next; i++; }
  }
  return o;
}

const a = args(process.argv.slice(2));
const runs = Number(a.runs ?? 30);
const topology = String(a.topology ?? 'embedded');
const calls = Number(a.calls ?? 6000);
const settleMs = Number(a['settle-ms'] ?? 30_000);
const firstSeed = a.seed !== undefined ? Number(a.seed) : randomInt(1, 2 ** 31 - 10_000);
if (!['embedded', 'serve', 'serve+worker'].includes(topology)) throw new Error(`--topology embedded|serve|serve+worker, not ${topology}`);

const servers = topology === 'embedded' ? undefined : await serversFromEnv();
if (topology === 'serve+worker' && !servers) { console.error('serve+worker needs DATABASE_URL and NATS_URL (NATS answering)'); process.exit(2); }
const kind: TopologyKind = topology === 'embedded' ? 'in-process' : (topology as TopologyKind);

let burner: ReturnType<typeof spawn> | undefined;
if (a.burn) {
  burner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  console.log(`CPU burner pid ${burner.pid}`);
}
const stopBurner = () => { if (burner && burner.exitCode === null) burner.kill('SIGKILL'); };
process.on('exit', stopBurner);

const topo = await startTopology({ kind, servers: !!servers, threads: a.threads ? Number(a.threads) : undefined });
console.log(`topology ${topology} (${servers ? 'Postgres + NATS' : 'embedded stores'}) at ${topo.url}${topo.prefix ? `, stream prefix ${topo.prefix}` : ''}; ${runs} runs of ${calls} calls${a.burn ? ', CPU burner on' : ''}`);

const reports: StormReport[] = [];
let crashed: unknown;
try {
  for (let run = 1; run <= runs; run++) {
    const seed = firstSeed + run - 1;
    let r: StormReport;
    try {
      r = await runStorm({ url: topo.url, operatorToken: topo.operatorToken, seed, calls, settleMs });
    } catch (err) {
      console.log(`run ${run} seed ${seed}: the storm failed: ${(err as Error).message}`);
      crashed = err;
      break;
    }
    reports.push(r);
    const left = topo.servers ? await topo.streamsLeft().catch(() => undefined) : undefined;
    console.log(`run ${run} seed ${seed}: ${r.violationCount} violations (missing ${r.missing}) ${r.calls} calls ${(r.durationMs / 1000).toFixed(1)} s` +
      ` [storm ${(r.stormMs / 1000).toFixed(1)} s, settle ${(r.settleMs / 1000).toFixed(1)} s, ${r.ackedTracks} acked tracks, ${r.replays} replays,` +
      ` ${r.components} components, ${r.retries} retries${left ? `, streams left ${left.ingest}/${left.events}` : ''}]`);
    for (const v of r.violations.slice(0, 12)) console.log(`    ${v}`);
    if (r.missingEvents.length) {
      console.log(`    missing (call/unit/replayed): ${r.missingEvents.slice(0, 40).map((m) => `${m.messageId}/u${m.unit}/r${m.replayedBy}`).join(' ')}`);
    }
  }
} finally {
  await topo.close();
  stopBurner();
}

const bad = reports.filter((r) => r.violationCount > 0);
const secs = reports.map((r) => r.durationMs / 1000);
const mean = secs.reduce((x, y) => x + y, 0) / Math.max(1, secs.length);
console.log(`summary ${topology}${a.burn ? ' +burn' : ''}: ${reports.length} runs, ${bad.length} with violations` +
  ` (missing per bad run: ${bad.map((r) => r.missing).join(', ') || '-'}; violations per bad run: ${bad.map((r) => r.violationCount).join(', ') || '-'});` +
  ` ${mean.toFixed(1)} s per run (min ${Math.min(...secs).toFixed(1)}, max ${Math.max(...secs).toFixed(1)}); seeds ${firstSeed}..${firstSeed + runs - 1}`);
if (typeof a.json === 'string') writeFileSync(a.json, JSON.stringify(reports.map(({ violations, ...r }) => ({ ...r, violations })), null, 1));
process.exit(bad.length || crashed ? 1 : 0);
