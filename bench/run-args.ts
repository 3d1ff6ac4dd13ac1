// The bench harness's command line (bench/run.ts lists the flags).
import { parseArgs as nodeParseArgs } from 'node:util';
import { findWrk } from './load.js';

export interface Options {
  quick: boolean; soak: boolean; privateNats: boolean; segments: boolean; only?: Set<string>;
  /** --scenarios a,b: run only these scenarios (names as in bench/run.ts), e.g. to profile one. */
  scenarios?: Set<string>;
  connections: number; threads: number; durationS: number; warmupS: number; soakS: number; soakWarmupS: number;
  loadgen: 'wrk' | 'autocannon'; users: number;
  /** Batch scenarios: 'only' (--batch), 'also' (default), 'off' (--no-batch). */
  batch: 'only' | 'also' | 'off';
  /** Runs of batch20-users1000 per headwater mode and floor (--repeat N, default 1): the stability target reads 5. */
  repeat: number;
  /** --pairs N: single track calls only, Fastify + pg and each headwater mode alternated N rounds (bench/pairs.ts); 0 = off. */
  pairs: number;
}

export const USAGE = `usage: npm run bench -- [flags]
  --quick              10 s per scenario after a 3 s warm-up (default 30 s after 5 s)
  --only LIST          servers: raw,fastify,floor,embedded,nats (comma-separated)
  --scenarios LIST     only these scenarios (names as in bench/run.ts)
  --batch              the batch scenarios alone; --no-batch leaves them out
  --repeat N           runs of batch20-users1000 per headwater mode and floor (default 1)
  --segments           track load in an org with 50 segments, per headwater mode
  --soak               a 5-minute track run per headwater mode (--soak-seconds, --soak-warmup)
  --connections N      load-generator connections (default 64); --threads N (wrk, default 2)
  --duration S         measured seconds; --warmup S
  --users N            userIds the load draws from (default 1000)
  --loadgen wrk|autocannon
  --private-nats       a nats-server of the run's own instead of NATS_URL
  --pairs N            single track calls only: Fastify + pg, each headwater mode and the shape's floor
                       (--only embedded,nats,floor) alternated N rounds, the median ratio per mode
                       (bench/pairs.ts) instead
  --journeys           the journey runtime's figures (bench/executions.ts) instead
  --help               this text`;

/** Unknown flags and flags without their value are errors (one line, exit 2), never ignored. */
export function parseArgs(argv: string[]): Options & { help: boolean } {
  const str = { type: 'string' } as const;
  const bool = { type: 'boolean' } as const;
  const { values: v } = nodeParseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      quick: bool, soak: bool, 'private-nats': bool, segments: bool, batch: bool, 'no-batch': bool, help: bool, journeys: bool,
      only: str, scenarios: str, loadgen: str, connections: str, threads: str, duration: str, warmup: str,
      'soak-seconds': str, 'soak-warmup': str, users: str, repeat: str, pairs: str,
    },
  });
  const num = (f: keyof typeof v, d: number) => {
    const x = v[f];
    if (x === undefined) return d;
    const n = Number(x);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${f} needs a positive number`);
    return n;
  };
  const list = (x: string | undefined) => (x ? new Set(x.split(',').map((s) => s.trim())) : undefined);
  const quick = v.quick === true;
  const lg = v.loadgen;
  if (lg !== undefined && lg !== 'wrk' && lg !== 'autocannon') throw new Error('--loadgen is wrk or autocannon');
  return {
    help: v.help === true,
    quick, soak: v.soak === true, privateNats: v['private-nats'] === true, segments: v.segments === true,
    only: list(v.only as string | undefined),
    scenarios: list(v.scenarios as string | undefined),
    connections: num('connections', 64),
    threads: num('threads', 2),
    durationS: num('duration', quick ? 10 : 30),
    warmupS: num('warmup', quick ? 3 : 5),
    soakS: num('soak-seconds', 300),
    soakWarmupS: num('soak-warmup', 30),
    loadgen: (lg as 'wrk' | 'autocannon' | undefined) ?? (findWrk() ? 'wrk' : 'autocannon'),
    users: num('users', 1000),
    batch: v.batch === true ? 'only' : v['no-batch'] === true ? 'off' : 'also',
    repeat: Math.floor(num('repeat', 1)),
    pairs: v.pairs === undefined ? 0 : Math.floor(num('pairs', 1)),
  };
}

/** Node flags for the headwater servers only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`), from HEADWATER_BENCH_NODE_ARGS. */
export const serverNodeArgs = () => (process.env.HEADWATER_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
