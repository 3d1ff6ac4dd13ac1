// One activation of a journey: the handler runs from the start in a fresh sandbox; recorded calls
// are answered from the journal, the first unrecorded effect calls go to the host (their results
// become new entries and the handler goes on in the same sandbox), and the first unrecorded sleep,
// waitForEvent or restart ends the activation. Calls are settled one at a time, with every promise
// job run in between, so a replay schedules the handler's continuations exactly as the live run did.
import type { QuickJSWASMModule } from 'quickjs-emscripten';
import type { JournalCall, JournalEntry, JournalResult } from '../schemas/mod.js';
import { canonicalJson, checkCall, type CallName, type EffectName } from './calls.js';
import { durationMs } from './duration.js';
import { Sandbox, timeoutFailure, type Failure } from './sandbox.js';
import { DEFAULT_LIMITS, type Activation, type ActivationInput, type Limits, type LogRecord } from './types.js';

interface Pending { at: number; name: CallName; args: Record<string, unknown>; json: string }

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);
const MAX_LOG_CHARS = 4096;
const TIMED_OUT = Symbol('timeout');

export function resolveLimits(partial: Partial<Limits> | undefined): Limits {
  const l = { ...DEFAULT_LIMITS, ...partial };
  for (const [k, v] of Object.entries(l)) {
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

export async function activate(module: QuickJSWASMModule, prelude: string, input: ActivationInput): Promise<Activation & { poisoned: boolean }> {
  const limits = resolveLimits(input.limits);
  const began = performance.now();
  const deadline = began + limits.wallMs;
  const now = input.now ?? Date.now();
  const recorded = input.journal;
  for (let i = 0; i < recorded.length; i++) if (recorded[i]!.at !== i) throw new RangeError(`journal entry ${i} has at=${recorded[i]!.at}`);

  const journal: JournalEntry[] = recorded.slice();
  const logs: LogRecord[] = [];
  const queue: Pending[] = [];
  let nextAt = 0;
  let consumed = 0;
  let hostCalls = 0;
  let logSeq = 0;
  let outcome: 'done' | Failure | null = null;
  let clock = startClock(input.event as Record<string, unknown>);

  const sb: Sandbox = new Sandbox(module, limits, deadline, {
    call(name, json, serializeError) {
      if (sb.abort) return -1;
      const at = nextAt;
      if (at >= limits.maxEntries) { sb.abort = { code: 'journey_fuel_exceeded', message: `the run reached ${limits.maxEntries} journal entries` }; return -1; }
      const c = serializeError ? { ok: false as const, message: `${name}: arguments are not JSON-serializable (${serializeError})` } : checkCall(name, json);
      if (!c.ok) { sb.abort = { code: 'journey_output_invalid', message: `call ${at}: ${c.message}` }; return -1; }
      nextAt++;
      queue.push({ at, name: name as CallName, args: c.args, json: canonicalJson(c.args) });
      return at;
    },
    log(level, message) {
      const seq = logSeq++;
      // Lines of positions already recorded were returned by an earlier activation.
      if (consumed < recorded.length || !LEVELS.has(level)) return;
      if (logs.length > limits.maxLogs) return;
      if (logs.length === limits.maxLogs) { logs.push({ seq, level: 'warn', message: `log limit of ${limits.maxLogs} lines per activation reached; further lines dropped` }); return; }
      const text = cleanText(message.length > MAX_LOG_CHARS ? `${message.slice(0, MAX_LOG_CHARS)}...` : message);
      logs.push({ seq, level: level as LogRecord['level'], message: text });
    },
    done() { outcome ??= 'done'; },
    fail(message) { outcome ??= sb.failWith(message); },
  }, { seed: input.execution.seed, clock, prelude });

  const stats = () => ({ replayed: Math.min(consumed, recorded.length), hostCalls, fuelUsed: sb.fuelUsed, wallMs: Math.round(performance.now() - began) });
  const end = (a: Activation): Activation & { poisoned: boolean } => { sb.dispose(); return { ...a, poisoned: sb.poisoned }; };
  const failed = (f: Failure) => end({ status: 'failed', code: f.code, message: f.message, journal, logs, stats: stats() });

  try {
    let f = sb.load(input.code) ?? sb.start('journey', canonicalJson(input.event));
    if (f) return failed(f);
    for (;;) {
      f = sb.pump();
      if (f) return failed(f);
      if (outcome !== null && outcome !== 'done') return failed(outcome);
      const next = queue.shift();
      if (!next) {
        if (outcome === null) return failed({ code: 'journey_error', message: 'the handler awaits a promise that no ctx call settles' });
        if (consumed < recorded.length) {
          return failed({ code: 'journey_nondeterministic', message: `the handler finished after ${consumed} calls, but the journal records ${recorded.length}` });
        }
        return end({ status: 'completed', journal, logs, stats: stats() });
      }

      let entry: JournalEntry;
      if (next.at < recorded.length) {
        entry = recorded[next.at]!;
        if (entry.call.name !== next.name || canonicalJson(entry.call.args) !== next.json) {
          return failed({
            code: 'journey_nondeterministic',
            message: `call ${next.at} is ${next.name} ${short(next.json)}, but the journal records ${entry.call.name} ${short(canonicalJson(entry.call.args))}`,
          });
        }
      } else {
        const call = { name: next.name, args: next.args } as JournalCall;
        if (next.name === 'sleep' || next.name === 'waitForEvent') {
          const ms = durationMs(next.name === 'sleep' ? next.args.duration : next.args.timeout)!;
          const wait = next.name === 'sleep'
            ? { kind: 'sleep' as const, until: now + ms, position: next.at, call }
            : { kind: 'event' as const, names: ([] as string[]).concat(next.args.event as string | string[]), until: now + ms, position: next.at, call };
          return end({ status: 'waiting', wait, journal, logs, stats: stats() });
        }
        if (next.name === 'restart') {
          const event = next.args.event as Record<string, unknown> | undefined;
          return end({ status: 'restart', position: next.at, call, ...(event ? { event } : {}), journal, logs, stats: stats() });
        }
        const remaining = deadline - performance.now();
        if (remaining <= 0) return failed(timeoutFailure(limits.wallMs));
        const ac = new AbortController();
        let timer: NodeJS.Timeout | undefined;
        let result: JournalResult | typeof TIMED_OUT;
        hostCalls++;
        try {
          result = await Promise.race([
            input.host.call({ name: next.name as EffectName, args: next.args, position: next.at, idempotencyKey: `${input.execution.id}:${input.execution.runId}:${next.at}`, signal: ac.signal }),
            new Promise<typeof TIMED_OUT>((r) => { timer = setTimeout(r, remaining, TIMED_OUT); }),
          ]);
        } catch (e) {
          return end({ status: 'retry', position: next.at, message: `host call ${next.name} failed: ${e instanceof Error ? e.message : String(e)}`, journal, logs, stats: stats() });
        } finally {
          clearTimeout(timer);
        }
        if (result === TIMED_OUT) { ac.abort(); return failed(timeoutFailure(limits.wallMs)); }
        const norm = normalizeResult(result);
        if (!norm) return end({ status: 'retry', position: next.at, message: `host call ${next.name} answered a malformed result`, journal, logs, stats: stats() });
        entry = { call, result: norm, at: next.at };
        journal.push(entry);
      }
      consumed++;
      clock = advance(clock, entry.call, entry.result);
      const r = entry.result;
      f = r.ok ? sb.settle(next.at, true, canonicalJson(r.value ?? null), clock)
        : sb.settle(next.at, false, JSON.stringify({ code: r.error.code, message: r.error.message }), clock);
      if (f) return failed(f);
    }
  } catch (e) {
    sb.dispose();
    throw e;
  }
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
