// A journey version's controls (docs/authoring.md, "Controls"): exit rules, the goal, the holdout
// share and the enrollment throttle and debounce, read from its manifest entry. The push schema
// accepts any value for them; this check fails the version (with the message) when the compiler
// takes it, so one bad option does not refuse the whole push.
import { durationMs } from '../runtime/mod.js';

export interface JourneyControls {
  exitOn: string[];
  goal: { event: string; withinMs: number; exit: boolean } | null;
  /** Percent of entrants held out, 0-50. */
  holdout: number;
  throttle: { limit: number; perMs: number } | null;
  debounceMs: number;
}

export const NO_CONTROLS: Readonly<JourneyControls> = Object.freeze({ exitOn: [], goal: null, holdout: 0, throttle: null, debounceMs: 0 });

const MAX_EXIT_NAMES = 20;
const isName = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 200;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const DURATION = "a duration like '30s', '5m', '1h', '7d' or an integer of milliseconds, more than 0 and at most 10 years";
const show = (v: unknown) => (JSON.stringify(v) ?? String(v)).slice(0, 100);
const positive = (v: unknown) => { const ms = durationMs(v); return ms !== null && ms > 0 ? ms : null; };

/** The controls of a journey manifest entry, or the message naming the first bad option. */
export function parseControls(entry: Record<string, unknown>): { ok: true; controls: JourneyControls } | { ok: false; message: string } {
  const bad = (message: string) => ({ ok: false as const, message });
  const c: JourneyControls = { ...NO_CONTROLS, exitOn: [] };
  const { exitOn, goal, holdout } = entry;
  const enrollment = isObject(entry.enrollment) ? entry.enrollment : {};
  if (exitOn !== undefined) {
    const names = typeof exitOn === 'string' ? [exitOn] : exitOn;
    if (!Array.isArray(names) || names.length < 1 || names.length > MAX_EXIT_NAMES || !names.every(isName)) {
      return bad(`exitOn must be an event name or an array of 1 to ${MAX_EXIT_NAMES} event names of 1 to 200 characters (got ${show(exitOn)})`);
    }
    c.exitOn = [...new Set(names as string[])];
  }
  if (goal !== undefined) {
    if (!isObject(goal)) return bad(`goal must be an object { event, within, exit? } (got ${show(goal)})`);
    for (const k of Object.keys(goal)) if (!['event', 'within', 'exit'].includes(k)) return bad(`goal has an unexpected member ${show(k)}`);
    if (!isName(goal.event)) return bad(`goal.event must be an event name of 1 to 200 characters (got ${show(goal.event)})`);
    const within = positive(goal.within);
    if (within === null) return bad(`goal.within must be ${DURATION} (got ${show(goal.within)})`);
    if (goal.exit !== undefined && typeof goal.exit !== 'boolean') return bad(`goal.exit must be true or false (got ${show(goal.exit)})`);
    c.goal = { event: goal.event, withinMs: within, exit: goal.exit === true };
  }
  if (holdout !== undefined) {
    if (typeof holdout !== 'number' || !Number.isFinite(holdout) || holdout < 0 || holdout > 50) return bad(`holdout must be a percentage from 0 to 50 (got ${show(holdout)})`);
    c.holdout = holdout;
  }
  const { throttle, debounce } = enrollment;
  if (throttle !== undefined) {
    if (!isObject(throttle)) return bad(`enrollment.throttle must be an object { limit, per } (got ${show(throttle)})`);
    for (const k of Object.keys(throttle)) if (k !== 'limit' && k !== 'per') return bad(`enrollment.throttle has an unexpected member ${show(k)}`);
    if (!Number.isSafeInteger(throttle.limit) || (throttle.limit as number) < 1 || (throttle.limit as number) > 1_000_000_000) {
      return bad(`enrollment.throttle.limit must be an integer from 1 to 1000000000 (got ${show(throttle.limit)})`);
    }
    const per = positive(throttle.per);
    if (per === null) return bad(`enrollment.throttle.per must be ${DURATION} (got ${show(throttle.per)})`);
    c.throttle = { limit: throttle.limit as number, perMs: per };
  }
  if (debounce !== undefined) {
    const ms = positive(debounce);
    if (ms === null) return bad(`enrollment.debounce must be ${DURATION} (got ${show(debounce)})`);
    c.debounceMs = ms;
  }
  return { ok: true, controls: c };
}

/** The controls of a stored (so already checked) manifest entry; none when it no longer parses. */
export const controlsOf = (entry: unknown): JourneyControls => {
  const r = isObject(entry) ? parseControls(entry) : null;
  return r?.ok ? r.controls : NO_CONTROLS;
};
