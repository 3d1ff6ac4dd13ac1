// The journal table as code: which calls a journey may make, what their arguments must be, and the
// canonical JSON used to compare a replayed call with the recorded one. Every argument is checked
// here before any effect, so a bad call fails the execution with journey_output_invalid and nothing
// reaches the host.
import { unstorable } from '../../schemas/storable.js';
import { durationMs } from './duration.js';

export const CALL_NAMES = [
  'sleep', 'waitForEvent', 'email.send', 'webhook.send', 'traits.set', 'traits.unset',
  'profile.get', 'profiles.get', 'events.track', 'restart', 'split',
] as const;
export type CallName = (typeof CALL_NAMES)[number];
/** Calls the host performs; sleep, waitForEvent and restart end the activation instead. */
export type EffectName = Exclude<CallName, 'sleep' | 'waitForEvent' | 'restart'>;

/** Serialized arguments of one call, at most this many UTF-16 units. */
export const MAX_ARGS_CHARS = 256 * 1024;
/** Variants of one ctx.split, at most this many. */
export const MAX_SPLIT_VARIANTS = 20;

/** Names a journey waits for, at most this many in one waitForEvent. */
export const MAX_WAIT_NAMES = 20;

type Args = Record<string, unknown>;
type Check = (args: Args) => string | null;

const isObject = (v: unknown): v is Args => v !== null && typeof v === 'object' && !Array.isArray(v);
const chars = (v: unknown) => (typeof v === 'string' ? ` (got ${v.length} characters)` : ` (got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v})`);

function str(name: string, min: number, max: number): (v: unknown) => string | null {
  return (v) => (typeof v === 'string' && v.length >= min && v.length <= max ? null : `${name} must be a string of ${min} to ${max} characters${chars(v)}`);
}
function obj(name: string): (v: unknown) => string | null {
  return (v) => (isObject(v) ? null : `${name} must be an object${chars(v)}`);
}
function duration(name: string): (v: unknown) => string | null {
  return (v) => (durationMs(v) !== null ? null
    : `${name} must be a duration like '500ms', '2s', '5m', '1h', '3d' or an integer of milliseconds, at most 10 years (got ${JSON.stringify(v) ?? 'undefined'})`);
}
/** Each listed member checked, and no other member present. */
function shape(members: Record<string, (v: unknown) => string | null>, optional: string[] = []): Check {
  return (args) => {
    for (const k of Object.keys(args)) if (!(k in members)) return `unexpected argument ${JSON.stringify(k)}`;
    for (const [k, check] of Object.entries(members)) {
      if (!(k in args)) { if (optional.includes(k)) continue; return `${k} is required`; }
      const why = check(args[k]);
      if (why) return why;
    }
    return null;
  };
}

const eventName = str('event', 1, 200);
const CHECKS: Record<CallName, Check> = {
  sleep: shape({ duration: duration('duration') }),
  waitForEvent: shape({
    event: (v) => {
      if (typeof v === 'string') return eventName(v);
      if (!Array.isArray(v) || v.length < 1 || v.length > MAX_WAIT_NAMES) return `event must be an event name or an array of 1 to ${MAX_WAIT_NAMES} names`;
      for (const n of v) { const why = eventName(n); if (why) return why; }
      return null;
    },
    timeout: duration('timeout'),
  }),
  'email.send': shape({ template: str('template', 0, 64), props: obj('props') }),
  'webhook.send': shape({ destination: str('destination', 1, 100), payload: obj('payload') }),
  'traits.set': shape({ key: str('key', 1, 200), value: () => null }),
  'traits.unset': shape({ key: str('key', 1, 200) }),
  'profile.get': shape({}),
  'profiles.get': shape({ id: str('id', 1, 200) }),
  'events.track': shape({ event: eventName, properties: obj('properties') }),
  restart: shape({ event: obj('event') }, ['event']),
  split: shape({
    name: str('name', 1, 100),
    weights: (v) => {
      const why = `weights must be an object of 1 to ${MAX_SPLIT_VARIANTS} variant keys (1 to 100 characters) to non-negative numbers, not all 0`;
      if (!isObject(v)) return why;
      const keys = Object.keys(v);
      if (keys.length < 1 || keys.length > MAX_SPLIT_VARIANTS) return why;
      for (const k of keys) {
        const w = v[k];
        if (k.length > 100 || k.length < 1 || typeof w !== 'number' || !Number.isFinite(w) || w < 0) return why;
      }
      return keys.some((k) => (v[k] as number) > 0) ? null : why;
    },
  }),
};

export const isCallName = (n: string): n is CallName => Object.prototype.hasOwnProperty.call(CHECKS, n);

/**
 * The arguments of a call as the sandbox serialized them, checked against the journal table.
 * `json` is the sandbox's JSON.stringify of the argument object (undefined members already dropped).
 */
export function checkCall(name: string, json: string): { ok: true; args: Args } | { ok: false; message: string } {
  if (!isCallName(name)) return { ok: false, message: `unknown call ${JSON.stringify(name.slice(0, 100))}` };
  if (json.length > MAX_ARGS_CHARS) return { ok: false, message: `${name}: arguments exceed ${MAX_ARGS_CHARS} characters of JSON` };
  let args: unknown;
  try { args = JSON.parse(json); } catch { return { ok: false, message: `${name}: arguments are not JSON-serializable` }; }
  if (!isObject(args)) return { ok: false, message: `${name}: arguments are not JSON-serializable` };
  const why = CHECKS[name](args);
  if (why) return { ok: false, message: `${name}: ${why}` };
  const bad = unstorable(args);
  if (bad) return { ok: false, message: `${name}: argument ${bad.pointer || '/'} ${bad.reason}` };
  return { ok: true, args };
}

/**
 * JSON with the members of every object in sorted order (integer-like keys first, as JavaScript
 * enumerates them): a stored journal (jsonb reorders members) and a live call compare equal, and
 * a value handed into the sandbox enumerates the same way on every replay.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  return JSON.stringify(value, (_k, v: unknown) => {
    if (!isObject(v)) return v;
    const keys = Object.keys(v).sort();
    const out: Args = {};
    for (const k of keys) out[k] = v[k];
    return out;
  }) ?? 'null';
}

/**
 * Whether two JSON values are equal, members compared regardless of their order (what
 * canonicalJson would tell, without writing either out); an undefined member counts as absent.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Args, y = b as Args;
  let n = 0;
  for (const k in x) {
    if (!Object.prototype.hasOwnProperty.call(x, k)) continue;
    if (x[k] === undefined) continue;
    if (!Object.prototype.hasOwnProperty.call(y, k) || !sameJson(x[k], y[k])) return false;
    n++;
  }
  for (const k in y) if (Object.prototype.hasOwnProperty.call(y, k) && y[k] !== undefined) n--;
  return n === 0;
}
