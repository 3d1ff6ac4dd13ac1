// The engine's public types: what an activation or a render takes and answers.
import type { Event, JournalCall, JournalEntry, JournalResult } from '../../schemas/mod.js';
import type { EffectName } from './calls.js';

export type FailureCode =
  | 'journey_fuel_exceeded' | 'journey_timeout' | 'journey_memory_exceeded'
  | 'journey_error' | 'journey_output_invalid' | 'journey_nondeterministic';

export interface Limits {
  /**
   * Interrupt-handler calls allowed in one activation (QuickJS calls it about every 10,000 function
   * calls or loop iterations; one unit is a few milliseconds of tight loop).
   */
  fuel: number;
  /** Wall-clock budget of one activation, host calls included. */
  wallMs: number;
  /** Memory cap of the QuickJS runtime. */
  memoryBytes: number;
  /** Journal entries one run may reach (a runaway loop of calls ends as journey_fuel_exceeded). */
  maxEntries: number;
  /** Log lines one activation keeps; further lines are dropped after one notice. */
  maxLogs: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  fuel: 1000,
  wallMs: 30_000,
  memoryBytes: 32 * 1024 * 1024,
  maxEntries: 10_000,
  maxLogs: 1000,
});

/** One effect the host performs; it must be idempotent per `idempotencyKey`. */
export interface HostCall {
  name: EffectName;
  args: Record<string, unknown>;
  position: number;
  /**
   * `executionId:runId:position`: the same call of a retried activation carries the same key; a
   * restarted run (new run id, positions from 0 again) gets new keys.
   */
  idempotencyKey: string;
  /** Aborted when the activation gives up waiting (its wall-clock budget ran out). */
  signal: AbortSignal;
}

export interface Host {
  /** Performs one effect. A rejection ends the activation with `retry` (the entry is not recorded). */
  call(call: HostCall): Promise<JournalResult>;
}

export interface LogRecord { seq: number; level: 'debug' | 'info' | 'warn' | 'error'; message: string }

export interface ActivationInput {
  /**
   * Compiled journey code: a script declaring `var __headwater_module` (esbuild's IIFE format with
   * that globalName). It is compiled once per sandbox as a function body and run per activation,
   * after the globals were frozen, so it must not rely on writing globals.
   */
  code: string;
  /**
   * `seed` seeds Math.random (with the call position): pass a per-run value if a restarted run should
   * draw other numbers. `id` and `runId` prefix idempotency keys.
   *
   * `lease` names the claim this activation runs under, and `journalLease` the claim whose saved
   * outcome wrote `journal` (both opaque; a runner without leases leaves them out). A parked
   * sandbox whose activation ran under `journalLease` stopped exactly at this journal, so its resume
   * skips comparing the journal entry by entry; any other resume compares it.
   */
  execution: { id: string; runId: string; seed: string; lease?: string; journalLease?: string };
  /** The trigger event: `ctx.event`; its `receivedAt` starts the virtual clock. */
  event: Event | Record<string, unknown>;
  /** The run's journal so far, in position order (`at` = index). */
  journal: readonly JournalEntry[];
  limits?: Partial<Limits>;
  host: Host;
  /** Wall-clock time (ms) wait deadlines are computed from; defaults to Date.now(). */
  now?: number;
}

/** A wait the caller registers; on wake it appends `{ call, result, at: position }` and activates again. */
export type Wait =
  | { kind: 'sleep'; until: number; position: number; call: JournalCall }
  | { kind: 'event'; names: string[]; until: number; position: number; call: JournalCall };

export interface ActivationStats {
  /** Recorded entries answered from the journal. */
  replayed: number;
  /** Host calls made. */
  hostCalls: number;
  fuelUsed: number;
  wallMs: number;
  /** The activation went on in the sandbox its run parked at the wait, instead of replaying. */
  resumed?: boolean;
}

interface Base { journal: JournalEntry[]; logs: LogRecord[]; stats: ActivationStats }
export type Activation =
  | (Base & { status: 'completed' })
  | (Base & { status: 'waiting'; wait: Wait })
  | (Base & { status: 'restart'; position: number; call: JournalCall; event?: Record<string, unknown> })
  | (Base & { status: 'failed'; code: FailureCode; message: string })
  /** The host failed (rejected); the journal so far is valid. Activate again later. */
  | (Base & { status: 'retry'; position: number; message: string });

export interface RenderInput {
  /** Compiled template code. */
  code: string;
  props: Record<string, unknown>;
  limits?: Partial<Pick<Limits, 'fuel' | 'wallMs' | 'memoryBytes'>>;
  /** Virtual clock of the render (Date.now() inside); defaults to Date.now(). */
  now?: number;
  /** Seeds Math.random inside the render; defaults to a constant. */
  seed?: string;
}

export type RenderResult =
  | { ok: true; subject: string; html: string; text: string }
  | { ok: false; code: FailureCode; message: string };
