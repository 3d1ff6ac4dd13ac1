// Replays recorded journals against a locally built journey, with the journey runtime the service
// runs (the same QuickJS sandbox, prelude and call checks, through its public entry) and the
// compile step the service applies to a pushed bundle. Effects are never performed: a call past the
// end of the journal is observed and refused, which ends the activation without recording anything.
import { newQuickJSWASMModule } from 'quickjs-emscripten';
import { canonicalJson, createEngine, type Activation, type Engine } from '../../journeys/runtime/mod.js';
import { compileBundle } from '../../journeys/definitions/mod.js';
import type { JournalCall, JournalEntry } from '../../schemas/mod.js';

export interface Recorded {
  id: string;
  runId: string;
  status: string;
  event: Record<string, unknown>;
  journal: JournalEntry[];
  /** The sleep or wait the execution is parked on (recorded at `at` once answered). */
  pending: { call: JournalCall; at: number } | null;
}

export interface Call { name: string; args: Record<string, unknown> }

export type Verdict =
  | { ok: true; replayed: number }
  /** The first differing call: `recorded` is what the journal (or the pending wait) holds, `code` what the local code calls (null: it ends there). */
  | { ok: false; kind: 'nondeterministic'; at: number; recorded: Call | null; code: Call | null }
  /** The local code fails while replaying a journal its own run got past. */
  | { ok: false; kind: 'fails'; code: string; message: string };

export interface Replayer {
  replay(r: Recorded): Promise<Verdict>;
  close(): void;
}

/** The next call the code makes after the first `n` entries of `r`'s journal: its name and args, or null when it ends. */
type Next = { at: number; call: Call } | { end: Activation['status']; message?: string; code?: string };

const OBSERVED = 'replay check: effects are not performed';

/** Compiles `bundle` (the project tool's ESM build of a journey) as the service does and prepares a replayer. */
export async function createReplayer(key: string, bundle: string): Promise<{ ok: true; replayer: Replayer } | { ok: false; error: string }> {
  const quickjs = await newQuickJSWASMModule();
  const compiled = await compileBundle(quickjs, { kind: 'journey', key, bundle: new TextEncoder().encode(bundle) });
  if (!compiled.ok) return { ok: false, error: `the local build of ${key} does not compile: ${compiled.error}` };
  const engine: Engine = await createEngine({ loadModule: async () => quickjs });
  const code = compiled.code;

  const next = async (r: Recorded, journal: JournalEntry[]): Promise<Next & { activation: Activation }> => {
    let seen: { at: number; call: Call } | undefined;
    const a = await engine.activate({
      code, journal, event: r.event,
      execution: { id: r.id, runId: r.runId, seed: r.runId },
      host: {
        async call(c) { seen = { at: c.position, call: { name: c.name, args: c.args } }; throw new Error(OBSERVED); },
      },
    });
    if (a.status === 'retry' && seen) return { ...seen, activation: a };
    if (a.status === 'waiting') return { at: a.wait.position, call: { name: a.wait.call.name, args: a.wait.call.args as Record<string, unknown> }, activation: a };
    if (a.status === 'restart') return { at: a.position, call: { name: a.call.name, args: a.call.args as Record<string, unknown> }, activation: a };
    if (a.status === 'failed') return { end: 'failed', code: a.code, message: a.message, activation: a };
    return { end: a.status, activation: a };
  };
  const same = (a: Call, b: Call) => a.name === b.name && canonicalJson(a.args) === canonicalJson(b.args);

  return {
    ok: true,
    replayer: {
      async replay(r) {
        const whole = await next(r, r.journal);
        const a = whole.activation;
        if (a.status === 'failed' && a.code === 'journey_nondeterministic') {
          // The runtime names the position; the code's own call there is read by replaying up to it.
          const m = /^call (\d+) is |finished after (\d+) calls/.exec(a.message);
          const at = m ? Number(m[1] ?? m[2]) : r.journal.length;
          const upTo = await next(r, r.journal.slice(0, at));
          const recorded = r.journal[at]?.call ?? null;
          return { ok: false, kind: 'nondeterministic', at, recorded: recorded && { name: recorded.name, args: recorded.args as Record<string, unknown> }, code: 'call' in upTo ? upTo.call : null };
        }
        if (a.status === 'failed') {
          // A run that failed the same way is replayed faithfully; a run that got further is broken.
          if (r.status === 'failed') return { ok: true, replayed: r.journal.length };
          return { ok: false, kind: 'fails', code: a.code, message: a.message };
        }
        if (r.pending) {
          const p = r.pending;
          const code = 'call' in whole && whole.at === p.at ? whole.call : null;
          if (!code || !same(code, { name: p.call.name, args: p.call.args as Record<string, unknown> })) {
            return { ok: false, kind: 'nondeterministic', at: p.at, recorded: { name: p.call.name, args: p.call.args as Record<string, unknown> }, code };
          }
        }
        return { ok: true, replayed: r.journal.length };
      },
      close() { engine.close(); },
    },
  };
}

/** `name {args}` as the runtime prints calls (canonical JSON, long arguments shortened). */
export function describeCall(c: Call | null): string {
  if (!c) return 'nothing (the handler ends there)';
  const json = canonicalJson(c.args);
  return `${c.name} ${json.length > 200 ? `${json.slice(0, 200)}...` : json}`;
}
