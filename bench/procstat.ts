// Readings from /proc for the benchmark: a process's CPU time, resident memory, peak memory and
// open file descriptors; the machine's busy time; CPU of named service processes (postgres,
// nats-server). Linux only; every reader answers undefined when the process is gone.
import { readFileSync, readdirSync } from 'node:fs';
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
export function cpuOfNamed(names: string[]): number {
  let sum = 0;
  let entries: string[] = [];
  try { entries = readdirSync('/proc'); } catch { return 0; }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const comm = readFileSync(`/proc/${e}/comm`, 'utf8').trim();
      if (!names.includes(comm)) continue;
      sum += cpuSeconds(Number(e)) ?? 0;
    } catch { /* gone meanwhile */ }
  }
  return sum;
}
