// `npm run bench -- --pairs N`: the single track target (headwater >= 1x Fastify + pg single, each
// mode) read from N alternated rounds instead of one pair of runs. On a small shared machine the
// baseline's own rate moves by a quarter between runs minutes apart, and a ratio of two runs taken
// minutes apart moves with it. Each round measures Fastify + pg, then each headwater mode (and the
// floor, below), back to back with the main bench's load settings (warm-up included), and takes
// the ratios within the round; the report gives each round's figures and the median ratio per mode
// (what the target is read on). As in the main bench every server runs alone: started for its
// measurement (headwater with a fresh data directory, and in NATS mode a fresh database) and
// stopped after it, once the machine has settled (under 10 % busy over a second, or 30 s passed: a
// previous server's ClickHouse merges or Postgres autovacuum would otherwise run during the next
// one's measurement).
// --only picks the headwater modes (embedded, nats) and `floor`: with NATS mode, each round then
// also measures the floor of headwater's shape (floor-nats-pg-ch-piscina: the stream, a Piscina hop
// per batch, events in ClickHouse, the least work a call), and the report reads headwater against
// it too: between two machines of one kind, Fastify's ratio moved by a fifth while this one stayed
// (docs/scaling.md). No --only: embedded, nats and the floor. NATS mode needs DATABASE_URL and
// NATS_URL (no --private-nats).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadSettings } from './load.js';
import type { Options } from './run-args.js';
import { headwaterFixture, reachable, serverEnv, sleep, startHeadwater, stopServer, type Fixture, type Server } from './run-servers.js';
import { measure } from './run-measure.js';
import { machineTicks } from './procstat.js';
import { gitState } from './run-report.js';
import { benchDatabase } from './child.js';
import { baseline, startBaseline } from './baselines.js';

/** The floor of headwater's shape on PostgreSQL + NATS (bench/baselines.ts). */
const FLOOR = 'floor-nats-pg-ch-piscina';

interface Round {
  fastify: number;
  modes: Record<string, { rps: number; p99: number; ratio: number }>;
  /** The shape's floor (with NATS mode and `floor` in --only): its rate and its ratio to Fastify. */
  floor?: { rps: number; ratio: number };
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2; };

/** Waits until the machine was under 10 % busy over one second, at most 30 s; answers the last reading. */
async function settled(): Promise<number> {
  let pct = 100;
  for (const end = Date.now() + 30_000; Date.now() < end;) {
    const a = machineTicks(); await sleep(1000); const b = machineTicks();
    pct = ((b.busy - a.busy) / Math.max(1, b.total - a.total)) * 100;
    if (pct < 10) break;
  }
  return pct;
}

export async function runPairs(o: Options): Promise<void> {
  if (o.privateNats) throw new Error('--pairs uses NATS_URL: leave out --private-nats');
  const settings: LoadSettings = { connections: o.connections, threads: Math.min(o.threads, o.connections), durationS: o.durationS, timeoutS: 10 };
  const dbUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
  const natsUrl = process.env.NATS_URL || 'nats://127.0.0.1:4222';
  const pgU = new URL(dbUrl);
  const nU = new URL(natsUrl);
  if (!await reachable(pgU.hostname, Number(pgU.port || 5432))) throw new Error(`Postgres not reachable at ${pgU.host} (DATABASE_URL): Fastify + pg needs it`);
  const modes = (['embedded', 'nats'] as const).filter((m) => !o.only || o.only.has(m));
  if (modes.length === 0) throw new Error('--only names no headwater mode (embedded, nats)');
  if (modes.includes('nats') && !await reachable(nU.hostname, Number(nU.port || 4222))) throw new Error(`NATS not reachable at ${nU.host} (NATS_URL)`);
  const withFloor = modes.includes('nats') && (!o.only || o.only.has('floor'));
  if (o.only?.has('floor') && !withFloor) process.stdout.write('  (the floor is that of NATS mode: add nats to --only to measure it)\n');
  const tmp = mkdtempSync(join(tmpdir(), 'hw-pairs-'));
  const base = serverEnv();
  const rounds: Round[] = [];
  process.stdout.write(`headwater bench --pairs ${o.pairs}: ${settings.connections} connections, ${settings.durationS} s after ${o.warmupS} s warm-up per measurement; ${cpus().length} cores, Node ${process.version}\n`);

  /** Starts one server alone, measures its track calls, stops it: answers req/s and p99. */
  const once = async (name: string): Promise<{ rps: number; p99: number }> => {
    const quiet = await settled();
    if (quiet >= 10) process.stdout.write(`  (the machine stayed ${quiet.toFixed(0)} % busy before ${name}: figures are noisier)\n`);
    let srv: Server | undefined;
    let db: Awaited<ReturnType<typeof benchDatabase>> | undefined;
    let dataDir: string | undefined;
    try {
      let fixture: Fixture | undefined;
      let target: { url: string; apiKey?: string; sourceId: string };
      if (!name.startsWith('headwater-')) {
        const b = baseline(name);
        srv = await startBaseline(b, { ...base, DATABASE_URL: dbUrl, ...(b.nats ? { NATS_URL: natsUrl } : {}) });
        target = { url: srv.url, sourceId: 'src_bench' };
      } else {
        const env: NodeJS.ProcessEnv = { ...base, HEADWATER_LOG_LEVEL: process.env.HEADWATER_LOG_LEVEL ?? 'warn' };
        if (name === 'headwater-nats') { db = await benchDatabase(dbUrl); env.DATABASE_URL = db.url; env.NATS_URL = natsUrl; }
        dataDir = mkdtempSync(join(tmp, 'data-'));
        const started = await startHeadwater(name, env, dataDir);
        srv = started.srv;
        fixture = await headwaterFixture(srv.url, started.operatorToken);
        target = { url: srv.url, apiKey: fixture.apiKey, sourceId: fixture.sourceId };
      }
      const r = await measure(o, srv, { ...target, kind: 'track' }, settings, tmp, { warmupS: o.warmupS, scenario: 'track', fixture });
      if (r.failed > 0) process.stdout.write(`  ! ${name}: ${r.failed} failed requests\n`);
      return { rps: r.rps, p99: r.load.p99Ms ?? NaN };
    } finally {
      if (srv) await stopServer(srv, 15_000);
      await db?.drop().catch(() => {});
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  };

  try {
    for (let k = 1; k <= o.pairs; k++) {
      const fastify = await once('fastify-pg');
      const got: Round['modes'] = {};
      for (const m of modes) { const x = await once(`headwater-${m}`); got[m] = { ...x, ratio: x.rps / fastify.rps }; }
      const f = withFloor ? (await once(FLOOR)).rps : undefined;
      const floor = f === undefined ? undefined : { rps: f, ratio: f / fastify.rps };
      rounds.push({ fastify: fastify.rps, modes: got, floor });
      process.stdout.write(`  round ${k}: fastify-pg ${fastify.rps.toFixed(0)} req/s; ${modes.map((m) => `headwater-${m} ${got[m]!.rps.toFixed(0)} (${got[m]!.ratio.toFixed(2)}x)`).join(', ')}` +
        `${floor ? `; ${FLOOR} ${floor.rps.toFixed(0)} (${floor.ratio.toFixed(2)}x)` : ''}\n`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const md = report(rounds, modes, settings, o);
  process.stdout.write(`\n${md}`);
  const outDir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'pairs.md'), md);
  process.stdout.write('\nwritten to bench/results/pairs.md\n');
}

function report(rounds: Round[], modes: readonly string[], s: LoadSettings, o: Options): string {
  const g = gitState();
  const floored = rounds.length > 0 && rounds.every((r) => r.floor !== undefined && r.modes.nats !== undefined);
  const lines = [
    '# Single track calls vs Fastify + pg single, alternated rounds',
    '',
    `\`npm run bench -- --pairs ${rounds.length}${o.quick ? ' --quick' : ''}${o.only ? ` --only ${[...o.only].join(',')}` : ''}\`: code ${g.commit?.slice(0, 12) ?? 'unknown'}${g.dirty?.length ? ' + local changes' : ''}; ` +
      `${s.connections} connections, ${s.durationS} s after ${o.warmupS} s warm-up per measurement; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}.`,
    '',
    `| round | fastify-pg req/s | ${modes.map((m) => `headwater-${m} req/s (p99 ms) | ratio`).join(' | ')}${floored ? ` | ${FLOOR} req/s | ratio | headwater-nats / floor` : ''} |`,
    `|---|---|${modes.map(() => '---|---').join('|')}${floored ? '|---|---|---' : ''}|`,
    ...rounds.map((r, i) => `| ${i + 1} | ${r.fastify.toFixed(0)} | ${modes.map((m) => `${r.modes[m]!.rps.toFixed(0)} (${r.modes[m]!.p99.toFixed(1)}) | ${r.modes[m]!.ratio.toFixed(2)}x`).join(' | ')}` +
      `${r.floor ? ` | ${r.floor.rps.toFixed(0)} | ${r.floor.ratio.toFixed(2)}x | ${(r.modes.nats!.rps / r.floor.rps).toFixed(2)}x` : ''} |`),
    '',
  ];
  const f = rounds.map((r) => r.fastify);
  lines.push(`Fastify + pg alone moved between ${Math.min(...f).toFixed(0)} and ${Math.max(...f).toFixed(0)} req/s over the rounds.`, '');
  for (const m of modes) {
    const rs = rounds.map((r) => r.modes[m]!.ratio);
    const med = median(rs);
    lines.push(`- ${med >= 1 ? 'PASS' : 'FAIL'} headwater-${m}: median ${med.toFixed(2)}x Fastify + pg single (rounds ${Math.min(...rs).toFixed(2)}-${Math.max(...rs).toFixed(2)}x; want >= 1x)`);
  }
  if (floored) {
    const fr = rounds.map((r) => r.floor!.ratio);
    const hr = rounds.map((r) => r.modes.nats!.rps / r.floor!.rps);
    lines.push(`- info ${FLOOR} (the shape's floor): median ${median(fr).toFixed(2)}x Fastify + pg single (rounds ${Math.min(...fr).toFixed(2)}-${Math.max(...fr).toFixed(2)}x); ` +
      `headwater-nats at a median ${median(hr).toFixed(2)}x of it (rounds ${Math.min(...hr).toFixed(2)}-${Math.max(...hr).toFixed(2)}x)`);
  }
  return lines.join('\n') + '\n';
}
