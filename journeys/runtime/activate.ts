// One activation of a journey. Normally the handler runs from the start in a sandbox of the
// journey's code (a reused one when the engine has it idle, runtime/cache.ts): recorded calls are
// answered from the journal, the first unrecorded effect calls go to the host (their results become
// new entries and the handler goes on in the same sandbox), and the first unrecorded sleep,
// waitForEvent or restart ends the activation. Calls are settled one at a time, with every promise
// job run in between, so a replay schedules the handler's continuations exactly as the live run did.
// An activation that ends waiting parks its sandbox with its state; when the same run resumes with
// the journal it left plus the wait's entry, the parked sandbox settles that entry and goes on, which
// is what the replay would reach (same settles, same jobs, same clock, same log sequence).
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import type { JournalCall, JournalEntry, JournalResult } from '../../schemas/mod.js';
import type { Pending, SandboxCache } from './cache.js';
import { canonicalJson, checkCall, sameJson, type CallName, type EffectName } from './calls.js';
import { durationMs } from './duration.js';
import { Sandbox, timeoutFailure, type Failure } from './sandbox.js';
import { DEFAULT_LIMITS, type Activation, type ActivationInput, type Limits, type LogRecord } from './types.js';

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);
const MAX_LOG_CHARS = 4096;
const TIMED_OUT = Symbol('timeout');

/** What an activation runs on: the engine's module, its minified prelude and its sandbox cache. */
export interface Env { module: QuickJSWASMModule; prelude: string; cache: SandboxCache }

const LIMIT_KEYS = Object.keys(DEFAULT_LIMITS) as (keyof Limits)[];

export function resolveLimits(partial: Partial<Limits> | undefined): Limits {
  if (!partial) return DEFAULT_LIMITS;
  const l = { ...DEFAULT_LIMITS, ...partial };
  for (const k of LIMIT_KEYS) {
    const v = l[k];
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`limit ${k} must be a positive integer`);
  }
  return l;
}

/** The virtual clock after a recorded entry: sleeps and waits move it, other calls do not. */
function advance(clock: number, call: JournalCall, result: JournalResult): number {
  if (call.name === 'sleep') return clock + (durationMs(call.args.duration) ?? 0);
  if (call.name === 'waitForEvent' && result.ok) {
    const ev = result.value as { receivedAt?: unknown } | null;
    if (ev && typeof ev.receivedAt === 'string') { const t = Date.parse(ev.receivedAt); return Number.isFinite(t) && t > clock ? t : clock; }
    if (ev === null) return clock + (durationMs(call.args.timeout) ?? 0);
  }
  return clock;
}

function startClock(event: Record<string, unknown>): number {
  for (const k of ['receivedAt', 'timestamp']) {
    const t = typeof event[k] === 'string' ? Date.parse(event[k] as string) : NaN;
    if (Number.isFinite(t)) return t;
  }
  return 0;
}

const short = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}...` : s);
const cleanText = (s: string) => s.replace(/\u0000/g, '\ufffd').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/** A sandbox for `code`: an idle one, or a new one with the prelude and code loaded. */
export function sandboxFor(env: Env, code: string, limits: Limits, deadline: number, hooks: Parameters<Sandbox['begin']>[2]): { sb: Sandbox; failure: Failure | null } {
  const idle = env.cache.take(code, env.module);
  const sb = idle ?? new Sandbox(env.module, limits);
  sb.begin(limits, deadline, hooks);
  if (idle) return { sb, failure: null };
  env.cache.stats.created++;
  return { sb, failure: sb.load(env.prelude, code) };
}

export async function activate(env: Env, input: ActivationInput): Promise<Activation & { poisoned: boolean }> {
  const limits = resolveLimits(input.limits);
  const began = performance.now();
  const deadline = began + limits.wallMs;
  const now = input.now ?? Date.now();
  const recorded = input.journal;
  for (let i = 0; i < recorded.length; i++) if (recorded[i]!.at !== i) throw new RangeError(`journal entry ${i} has at=${recorded[i]!.at}`);
  const exec = input.execution;
  env.cache.sweep(Date.now());

  const journal: JournalEntry[] = recorded.slice();
  const logs: LogRecord[] = [];
  let queue: Pending[] = [];
  let nextAt = 0;
  let consumed = 0;
  let hostCalls = 0;
  let logSeq = 0;
  let outcome: 'done' | Failure | null = null;
  let clock = startClock(input.event as Record<string, unknown>);
  let next: Pending | undefined;
  // One timer per activation bounds every host call by the activation's deadline; the call in
  // progress is the one it ends, and the signal is aborted for it.
  let expiry: NodeJS.Timeout | undefined;
  let onExpiry: () => void = () => {};
  let ac: AbortController | undefined;

  const hooks = {
    call(name: string, json: string, serializeError: string) {
      if (sb.abort) return -1;
      const at = nextAt;
      if (at >= limits.maxEntries) { sb.abort = { code: 'journey_fuel_exceeded', message: `the run reached ${limits.maxEntries} journal entries` }; return -1; }
      const c = serializeError ? { ok: false as const, message: `${name}: arguments are not JSON-serializable (${serializeError})` } : checkCall(name, json);
      if (!c.ok) { sb.abort = { code: 'journey_output_invalid', message: `call ${at}: ${c.message}` }; return -1; }
      nextAt++;
      queue.push({ at, name: name as CallName, args: c.args });
      return at;
    },
    log(level: string, message: string) {
      const seq = logSeq++;
      // Lines of positions already recorded were returned by an earlier activation.
      if (consumed < recorded.length || !LEVELS.has(level)) return;
      if (logs.length > limits.maxLogs) return;
      if (logs.length === limits.maxLogs) { logs.push({ seq, level: 'warn', message: `log limit of ${limits.maxLogs} lines per activation reached; further lines dropped` }); return; }
      const text = cleanText(message.length > MAX_LOG_CHARS ? `${message.slice(0, MAX_LOG_CHARS)}...` : message);
      logs.push({ seq, level: level as LogRecord['level'], message: text });
    },
    done() { outcome ??= 'done'; },
    fail(message: string) { outcome ??= sb.failWith(message); },
  };

  // The parked sandbox of this run, when it stopped exactly where this journal ends.
  let sb: Sandbox;
  let resumed = false;
  const parked = env.cache.unpark(exec.id);
  // The journal is the one the parking activation's own save wrote when that save was made under
  // its claim: then nobody else wrote it since (a takeover or a discarded save leaves another
  // writer's lease), and comparing it entry by entry (about half of a resume's CPU after 100
  // entries) is skipped.
  if (parked && parked.sandbox.module === env.module && parked.code === input.code && parked.runId === exec.runId && parked.seed === exec.seed
    && recorded.length === parked.journal.length + 1 && parked.wait.at === parked.journal.length
    && ((parked.lease !== undefined && parked.lease === exec.journalLease) || sameEntries(recorded, parked.journal))) {
    sb = parked.sandbox;
    sb.begin(limits, deadline, hooks);
    queue = parked.queue; nextAt = parked.nextAt; logSeq = parked.logSeq; clock = parked.clock;
    consumed = parked.journal.length; next = parked.wait;
    resumed = true;
    env.cache.stats.resumed++;
  } else {
    if (parked) env.cache.release(parked.code, parked.sandbox);
    const got = sandboxFor(env, input.code, limits, deadline, hooks);
    sb = got.sb;
    const f = got.failure ?? sb.open(exec.seed, clock) ?? sb.start('journey', canonicalJson(input.event));
    if (f) { sb.dispose(); return { status: 'failed', code: f.code, message: f.message, journal, logs, stats: { replayed: 0, hostCalls: 0, fuelUsed: sb.fuelUsed, wallMs: Math.round(performance.now() - began), resumed }, poisoned: sb.poisoned }; }
  }

  const stats = () => ({ replayed: Math.min(consumed, recorded.length), hostCalls, fuelUsed: sb.fuelUsed, wallMs: Math.round(performance.now() - began), resumed });
  /** The activation's answer; its sandbox parked (waiting), kept for reuse, or disposed (failed). */
  const end = (a: Activation, wait?: Pending): Activation & { poisoned: boolean } => {
    if (a.status === 'failed') sb.dispose();
    else if (wait && journal.length >= env.cache.limits.parkMinEntries) {
      env.cache.park(exec.id, {
        sandbox: sb, code: input.code, runId: exec.runId, seed: exec.seed, journal: journal.slice(), lease: exec.lease,
        wait, queue, nextAt, logSeq, clock, parkedAt: Date.now(),
      });
    } else env.cache.release(input.code, sb);
    return { ...a, poisoned: sb.poisoned };
  };
  const failed = (f: Failure) => end({ status: 'failed', code: f.code, message: f.message, journal, logs, stats: stats() });

  try {
    let f: Failure | null;
    for (;;) {
      if (!next) {
        f = sb.pump();
        if (f) return failed(f);
        if (outcome !== null && outcome !== 'done') return failed(outcome);
        next = queue.shift();
        if (!next) {
          if (outcome === null) {
            const d = sb.finished();
            if (d !== true) return failed(d || { code: 'journey_error', message: 'the handler awaits a promise that no ctx call settles' });
            outcome = 'done';
          }
          if (consumed < recorded.length) {
            return failed({ code: 'journey_nondeterministic', message: `the handler finished after ${consumed} calls, but the journal records ${recorded.length}` });
          }
          return end({ status: 'completed', journal, logs, stats: stats() });
        }
      }
      const cur: Pending = next;
      next = undefined;

      let entry: JournalEntry;
      if (cur.at < recorded.length) {
        entry = recorded[cur.at]!;
        if (entry.call.name !== cur.name || !sameJson(entry.call.args, cur.args)) {
          return failed({
            code: 'journey_nondeterministic',
            message: `call ${cur.at} is ${cur.name} ${short(canonicalJson(cur.args))}, but the journal records ${entry.call.name} ${short(canonicalJson(entry.call.args))}`,
          });
        }
      } else {
        const call = { name: cur.name, args: cur.args } as JournalCall;
        if (cur.name === 'sleep' || cur.name === 'waitForEvent') {
          const ms = durationMs(cur.name === 'sleep' ? cur.args.duration : cur.args.timeout)!;
          const wait = cur.name === 'sleep'
            ? { kind: 'sleep' as const, until: now + ms, position: cur.at, call }
            : { kind: 'event' as const, names: ([] as string[]).concat(cur.args.event as string | string[]), until: now + ms, position: cur.at, call };
          return end({ status: 'waiting', wait, journal, logs, stats: stats() }, cur);
        }
        if (cur.name === 'restart') {
          const event = cur.args.event as Record<string, unknown> | undefined;
          return end({ status: 'restart', position: cur.at, call, ...(event ? { event } : {}), journal, logs, stats: stats() });
        }
        const remaining = deadline - performance.now();
        if (remaining <= 0) return failed(timeoutFailure(limits.wallMs));
        let result: JournalResult | typeof TIMED_OUT;
        hostCalls++;
        try {
          result = await new Promise<JournalResult | typeof TIMED_OUT>((resolve, reject) => {
            onExpiry = () => resolve(TIMED_OUT);
            expiry ??= setTimeout(() => { ac?.abort(); onExpiry(); }, remaining);
            input.host.call({
              name: cur.name as EffectName, args: cur.args, position: cur.at, idempotencyKey: `${exec.id}:${exec.runId}:${cur.at}`,
              // Made when a host reads it: most hosts never do, and a controller costs more than the rest of the call.
              get signal() { return (ac ??= new AbortController()).signal; },
            }).then(resolve, reject);
          });
        } catch (e) {
          return end({ status: 'retry', position: cur.at, message: `host call ${cur.name} failed: ${e instanceof Error ? e.message : String(e)}`, journal, logs, stats: stats() });
        }
        if (result === TIMED_OUT) return failed(timeoutFailure(limits.wallMs));
        const norm = normalizeResult(result);
        if (!norm) return end({ status: 'retry', position: cur.at, message: `host call ${cur.name} answered a malformed result`, journal, logs, stats: stats() });
        // recordedAt is for readers (when the effect was recorded); replay matches on position and call.
        entry = { call, result: norm, at: cur.at, recordedAt: new Date().toISOString() };
        journal.push(entry);
      }
      consumed++;
      clock = advance(clock, entry.call, entry.result);
      const r = entry.result;
      f = r.ok ? sb.settle(cur.at, true, canonicalJson(r.value ?? null), clock)
        : sb.settle(cur.at, false, JSON.stringify({ code: r.error.code, message: r.error.message }), clock);
      if (f) return failed(f);
    }
  } catch (e) {
    sb.dispose();
    throw e;
  } finally {
    clearTimeout(expiry);
  }
}

/** Whether the recorded journal begins with the entries a run parked with. */
function sameEntries(recorded: readonly JournalEntry[], parked: readonly JournalEntry[]): boolean {
  for (let i = 0; i < parked.length; i++) if (!sameJson(recorded[i], parked[i])) return false;
  return true;
}

/** The result as it will read back from storage (JSON, members in canonical order), or null. */
function normalizeResult(r: unknown): JournalResult | null {
  if (!r || typeof r !== 'object') return null;
  const x = r as { ok?: unknown; value?: unknown; error?: { code?: unknown; message?: unknown } };
  if (x.ok === true) {
    try { return { ok: true, value: JSON.parse(canonicalJson(x.value === undefined ? null : x.value)) }; } catch { return null; }
  }
  if (x.ok === false && x.error && typeof x.error.code === 'string' && x.error.code.length > 0 && typeof x.error.message === 'string') {
    return { ok: false, error: { code: x.error.code, message: x.error.message } };
  }
  return null;
}
