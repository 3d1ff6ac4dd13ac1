// The sandboxes an engine keeps between activations, in two bounded sets:
// - idle: loaded and hardened sandboxes per compiled code, free for the next activation of that
//   code (loading the prelude and compiling the bundle is most of a fresh sandbox's cost);
// - parked: the sandbox of an execution that stopped at a sleep or waitForEvent, with the
//   activation's state, so its resume settles the wait and goes on instead of replaying the journal.
//   Bounded in number and age; an evicted, expired or mismatching entry means a replay.
// Everything lives in the engine's WebAssembly module; entries of a dropped (poisoned) module are
// forgotten without being disposed.
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import type { JournalEntry } from '../../schemas/mod.js';
import type { Sandbox } from './sandbox.js';

export interface CacheLimits {
  /** Idle sandboxes kept per compiled code. */
  idlePerCode: number;
  /** Idle sandboxes kept in all (least recently used code evicted first). */
  idleTotal: number;
  /** Waiting executions whose sandbox is kept; 0 turns the parked set off (every resume replays). */
  parkedMax: number;
  /** How long a parked sandbox is kept. */
  parkedTtlMs: number;
  /**
   * Entries a waiting run must have recorded for its sandbox to be parked. A parked sandbox is not
   * free for other activations, so the next one may have to load a new sandbox (~2 ms of CPU); a
   * replay costs ~30-40 us per entry, so short journals replay more cheaply than they park.
   */
  parkMinEntries: number;
}

/**
 * A runner thread holds up to 64 activations at once (ACTIVATIONS_PER_THREAD), often of one journey:
 * with fewer idle sandboxes per code than that, the activations beyond them loaded a new sandbox
 * (~2 ms of CPU) and freed it again, each time. 128 in all keeps two busy journeys warm
 * (~0.3 MB each).
 */
export const ACTIVATIONS_PER_THREAD = 64;

export const DEFAULT_CACHE: Readonly<CacheLimits> = Object.freeze({
  idlePerCode: ACTIVATIONS_PER_THREAD, idleTotal: 2 * ACTIVATIONS_PER_THREAD, parkedMax: 128, parkedTtlMs: 10 * 60_000, parkMinEntries: 16,
});

/** One call the sandbox issued and the host has not answered yet. */
export interface Pending { at: number; name: string; args: Record<string, unknown> }

/** The state of an activation that ended waiting, as its resume needs it. */
export interface Parked {
  sandbox: Sandbox;
  code: string;
  runId: string;
  seed: string;
  /**
   * The journal when it parked (entries before the wait), compared entry by entry on resume unless
   * the journal handed in is the one this activation's own save wrote (`lease`).
   */
  journal: readonly JournalEntry[];
  /** The claim the parking activation ran under (ActivationInput.execution.lease). */
  lease: string | undefined;
  /** The wait call, then calls issued after it in the same turn. */
  wait: Pending;
  queue: Pending[];
  nextAt: number;
  logSeq: number;
  clock: number;
  parkedAt: number;
}

export interface CacheStats { idle: number; parked: number; created: number; reused: number; resumed: number; evicted: number }

export class SandboxCache {
  private readonly idle = new Map<string, Sandbox[]>();
  private idleCount = 0;
  private readonly parked = new Map<string, Parked>();
  readonly stats: CacheStats = { idle: 0, parked: 0, created: 0, reused: 0, resumed: 0, evicted: 0 };

  constructor(readonly limits: CacheLimits) {}

  /** An idle sandbox of `code` on `module`, or undefined. */
  take(code: string, module: QuickJSWASMModule): Sandbox | undefined {
    const list = this.idle.get(code);
    if (!list) return undefined;
    let sb: Sandbox | undefined;
    while (!sb && list.length) { const x = list.pop()!; this.idleCount--; if (x.module === module && x.reusable) sb = x; else this.dispose(x); }
    if (list.length === 0) this.idle.delete(code);
    else { this.idle.delete(code); this.idle.set(code, list); }
    if (sb) this.stats.reused++;
    this.count();
    return sb;
  }

  /** Gives a sandbox back after its activation; disposed when it may not be reused or no room is left. */
  release(code: string, sb: Sandbox): void {
    if (!sb.reusable) { this.dispose(sb); return; }
    let list = this.idle.get(code);
    if (list && list.length >= this.limits.idlePerCode) { this.dispose(sb); return; }
    if (!list) list = [];
    this.idle.delete(code);
    this.idle.set(code, list);
    list.push(sb);
    this.idleCount++;
    while (this.idleCount > this.limits.idleTotal) {
      const [oldest, l] = this.idle.entries().next().value as [string, Sandbox[]];
      this.dispose(l.shift()!);
      this.idleCount--;
      if (l.length === 0) this.idle.delete(oldest);
    }
    this.count();
  }

  park(executionId: string, p: Parked): void {
    if (this.limits.parkedMax <= 0 || !p.sandbox.reusable) { this.dispose(p.sandbox); return; }
    this.unpark(executionId, true);
    this.parked.set(executionId, p);
    while (this.parked.size > this.limits.parkedMax) {
      this.unpark(this.parked.keys().next().value as string, true);
      this.stats.evicted++;
    }
    this.count();
  }

  /** Takes the parked state of an execution out (disposing its sandbox when `discard`). */
  unpark(executionId: string, discard = false): Parked | undefined {
    const p = this.parked.get(executionId);
    if (!p) return undefined;
    this.parked.delete(executionId);
    this.count();
    if (discard) { this.dispose(p.sandbox); return undefined; }
    return p;
  }

  /** Drops parked sandboxes older than the age bound (oldest first, so it stops at the first young one). */
  sweep(now: number): void {
    for (const [id, p] of this.parked) {
      if (now - p.parkedAt <= this.limits.parkedTtlMs) break;
      this.unpark(id, true);
      this.stats.evicted++;
    }
  }

  /** Forgets every sandbox of a dropped module, without touching its memory. */
  forget(module: QuickJSWASMModule): void {
    for (const [code, list] of this.idle) {
      const keep = list.filter((sb) => sb.module !== module);
      this.idleCount -= list.length - keep.length;
      if (keep.length) this.idle.set(code, keep); else this.idle.delete(code);
    }
    for (const [id, p] of this.parked) if (p.sandbox.module === module) this.parked.delete(id);
    this.count();
  }

  clear(): void {
    for (const list of this.idle.values()) for (const sb of list) this.dispose(sb);
    for (const p of this.parked.values()) this.dispose(p.sandbox);
    this.idle.clear();
    this.parked.clear();
    this.idleCount = 0;
    this.count();
  }

  private dispose(sb: Sandbox): void { sb.dispose(); }
  private count(): void { this.stats.idle = this.idleCount; this.stats.parked = this.parked.size; }
}
