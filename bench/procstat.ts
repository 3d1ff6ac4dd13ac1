// Readings from /proc for the benchmark: a process's CPU time, resident memory, peak memory and
// open file descriptors; the machine's busy time; CPU of named service processes (postgres,
// nats-server). Linux only; every reader answers undefined when the process is gone.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

let clkTck: number | undefined;
export function ticksPerSecond(): number {
  if (clkTck === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(r.stdout?.trim());
    clkTck = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return clkTck;
}

/** utime + stime of a whole process (all its threads), in seconds. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may contain spaces: split after the last ')'.
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // Fields after the name start at field 3 (state); utime is field 14, stime field 15.
    return (Number(f[11]) + Number(f[12])) / ticksPerSecond();
  } catch { return undefined; }
}

export interface MemReading { rssMB: number; hwmMB: number; threads: number }

export function memory(pid: number): MemReading | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? NaN);
    return { rssMB: kb('VmRSS') / 1024, hwmMB: kb('VmHWM') / 1024, threads: kb('Threads') };
  } catch { return undefined; }
}

export function openFds(pid: number): number | undefined {
  try { return readdirSync(`/proc/${pid}/fd`).length; } catch { return undefined; }
}

/** Busy and total jiffies of the whole machine (first line of /proc/stat). */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** Summed CPU seconds of every process whose command name is one of `names` (read-only scan). */
/** CPU seconds of every process named one of `names`, by pid. */
export function cpuOfNamed(names: string[]): Map<number, number> {
  const out = new Map<number, number>();
  let entries: string[] = [];
  try { entries = readdirSync('/proc'); } catch { return out; }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const comm = readFileSync(`/proc/${e}/comm`, 'utf8').trim();
      if (!names.includes(comm)) continue;
      const cpu = cpuSeconds(Number(e));
      if (cpu !== undefined) out.set(Number(e), cpu);
    } catch { /* gone meanwhile */ }
  }
  return out;
}

/**
 * CPU seconds the processes used between two cpuOfNamed readings, pid by pid. A process that ended
 * meanwhile (a Postgres backend) is left out: summing totals instead made the figure negative.
 */
export function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

/** CPU seconds of each thread of a process, with the thread's name (comm). */
export function threadCpu(pid: number): Map<number, { comm: string; cpuS: number }> {
  const out = new Map<number, { comm: string; cpuS: number }>();
  let tids: string[] = [];
  try { tids = readdirSync(`/proc/${pid}/task`); } catch { return out; }
  for (const t of tids) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const comm = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.set(Number(t), { comm, cpuS: (Number(f[11]) + Number(f[12])) / ticksPerSecond() });
    } catch { /* thread ended */ }
  }
  return out;
}

/**
 * Where a process's CPU went between two `threadCpu` readings, as % of one core over `wallS`:
 * the main thread; each other thread named "node" (worker threads such as Piscina workers and the
 * PGlite host, V8 platform and libuv threads; labelled by creation order), and threads with other
 * names (chDB's ClickHouse pools) summed by name.
 */
export function threadBreakdown(pid: number, a: Map<number, { comm: string; cpuS: number }>, b: Map<number, { comm: string; cpuS: number }>, wallS: number): Array<{ thread: string; pct: number }> {
  const acc = new Map<string, number>();
  const nodeTids = [...b.keys()].filter((t) => t !== pid && b.get(t)!.comm === 'node').sort((x, y) => x - y);
  for (const [tid, v] of b) {
    const d = v.cpuS - (a.get(tid)?.cpuS ?? 0);
    if (d <= 0) continue;
    const label = tid === pid ? 'main' : v.comm === 'node' ? `node#${nodeTids.indexOf(tid) + 1}` : `${v.comm}*`;
    acc.set(label, (acc.get(label) ?? 0) + d);
  }
  return [...acc].map(([thread, s]) => ({ thread, pct: (s / wallS) * 100 })).sort((x, y) => y.pct - x.pct);
}

/**
 * Embedded Postgres's own files (headwater's data directory keeps them under `pg/data/`): PGlite
 * opens a relation's file, or its free-space and visibility maps, the first time it needs them, one
 * more for each gigabyte a table grows, and the current WAL segment, and keeps them in its own
 * bounded descriptor cache (`max_files_per_process`); their number follows the store, not a leak.
 */
const STORE_FILE = /\/pg\/data\//;

/** What each open descriptor of a process points to (readlink of /proc/<pid>/fd/*); undefined once it is gone. */
export function fdTargets(pid: number): string[] | undefined {
  let fds: string[];
  try { fds = readdirSync(`/proc/${pid}/fd`); } catch { return undefined; }
  const out: string[] = [];
  for (const fd of fds) {
    try { out.push(readlinkSync(`/proc/${pid}/fd/${fd}`)); } catch { /* closed meanwhile */ }
  }
  return out;
}

/**
 * Descriptors by kind (of `fdTargets`): socket, pipe, anon_inode, store (embedded Postgres's files,
 * STORE_FILE), file (other regular files and dirs), other.
 */
export function fdKinds(targets: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of targets) {
    const kind = t.startsWith('socket:') ? 'socket' : t.startsWith('pipe:') ? 'pipe' : t.startsWith('anon_inode:') ? 'anon' : t.startsWith('/') ? (STORE_FILE.test(t) ? 'store' : 'file') : 'other';
    out[kind] = (out[kind] ?? 0) + 1;
  }
  return out;
}

/** The regular files (and dirs) among `fdTargets`, one entry a descriptor. */
export const openFiles = (targets: string[]): string[] => targets.filter((t) => t.startsWith('/'));

/** What `after` holds that `before` did not (opened) and the reverse (closed), counting repeats. */
export function filesDiff(before: string[], after: string[]): { opened: string[]; closed: string[] } {
  const left = new Map<string, number>();
  for (const f of before) left.set(f, (left.get(f) ?? 0) + 1);
  const opened: string[] = [];
  for (const f of after) { const n = left.get(f) ?? 0; if (n > 0) left.set(f, n - 1); else opened.push(f); }
  const closed = [...left].flatMap(([f, n]) => Array<string>(n).fill(f));
  return { opened, closed };
}

/**
 * CPU seconds of the Postgres processes that work for `databases`, by pid: client backends whose
 * command line names one of them, and the server's shared processes (postmaster, checkpointer,
 * WAL writer, background writer, autovacuum). Backends of other databases (other work on a shared
 * server) are left out. Without `databases`, every postgres process.
 */
export function cpuOfPostgres(databases?: string[]): Map<number, number> {
  const all = cpuOfNamed(['postgres']);
  if (!databases?.length) return all;
  const out = new Map<number, number>();
  for (const [pid, cpu] of all) {
    let cmd = '';
    try { cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(); } catch { continue; }
    // A client backend: "postgres: 15/main: USER DB 127.0.0.1(port) STATE" (or [local]).
    const client = /\d+\.\d+\.\d+\.\d+\(\d+\)|\[local\]|::1\(\d+\)/.test(cmd);
    if (!client || databases.some((d) => cmd.includes(` ${d} `))) out.set(pid, cpu);
  }
  return out;
}

/** CPU seconds of the given pids (those still running). */
export function cpuOfPids(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) { const c = cpuSeconds(pid); if (c !== undefined) out.set(pid, c); }
  return out;
}
