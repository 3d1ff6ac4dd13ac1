// The bench harness's command line (bench/run.ts lists the flags).
import { findWrk } from './load.js';

export interface Options {
  quick: boolean; soak: boolean; privateNats: boolean; segments: boolean; only?: Set<string>;
  /** --scenarios a,b: run only these scenarios (names as in bench/run.ts), e.g. to profile one. */
  scenarios?: Set<string>;
  connections: number; threads: number; durationS: number; warmupS: number; soakS: number; soakWarmupS: number;
  loadgen: 'wrk' | 'autocannon'; users: number;
  /** Batch scenarios: 'only' (--batch), 'also' (default), 'off' (--no-batch). */
  batch: 'only' | 'also' | 'off';
  /** Runs of batch20-users1000 per headwater mode (--repeat N, default 1): the stability target reads 5. */
  repeat: number;
}

export function parseArgs(argv: string[]): Options {
  const has = (f: string) => argv.includes(f);
  const val = (f: string) => { const i = argv.indexOf(f); return i !== -1 ? argv[i + 1] : undefined; };
  const num = (f: string, d: number) => { const v = val(f); if (v === undefined) return d; const n = Number(v); if (!Number.isFinite(n) || n <= 0) throw new Error(`${f} needs a positive number`); return n; };
  const quick = has('--quick');
  const only = val('--only');
  const scen = val('--scenarios');
  const lg = val('--loadgen');
  if (lg !== undefined && lg !== 'wrk' && lg !== 'autocannon') throw new Error('--loadgen is wrk or autocannon');
  return {
    quick, soak: has('--soak'), privateNats: has('--private-nats'), segments: has('--segments'),
    only: only ? new Set(only.split(',').map((s) => s.trim())) : undefined,
    scenarios: scen ? new Set(scen.split(',').map((s) => s.trim())) : undefined,
    connections: num('--connections', 64),
    threads: num('--threads', 2),
    durationS: num('--duration', quick ? 10 : 30),
    warmupS: num('--warmup', quick ? 3 : 5),
    soakS: num('--soak-seconds', 300),
    soakWarmupS: num('--soak-warmup', 30),
    loadgen: (lg as 'wrk' | 'autocannon' | undefined) ?? (findWrk() ? 'wrk' : 'autocannon'),
    users: num('--users', 1000),
    batch: has('--batch') ? 'only' : has('--no-batch') ? 'off' : 'also',
    repeat: Math.floor(num('--repeat', 1)),
  };
}

/** Node flags for the headwater servers only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`), from HEADWATER_BENCH_NODE_ARGS. */
export const serverNodeArgs = () => (process.env.HEADWATER_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
