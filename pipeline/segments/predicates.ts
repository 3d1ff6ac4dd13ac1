// Predicate semantics (documented in the OpenAPI description, schemas/resources.ts
// PREDICATE_SEMANTICS). Pure functions: the same code decides on writes, backfills, sweeps and
// previews, so they never disagree.
import type { Compiled, Definition, EventPredicate, SegmentDef, TraitPredicate } from './types.js';

/** Exact JSON equality: same type and value; objects by key set (order ignored), arrays in order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

// A date (midnight UTC) or an RFC 3339 date-time with its offset: without an offset the instant
// would depend on the server's time zone.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2}))?$/;

/** Epoch milliseconds of an ISO 8601 date or date-time string; undefined for anything else. */
export function instant(v: unknown): number | undefined {
  if (typeof v !== 'string' || !DATE_TIME.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

/** Orders two values: numbers with numbers, date-times with date-times; undefined otherwise. */
function order(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const ta = instant(a);
  if (ta === undefined) return undefined;
  const tb = instant(b);
  return tb === undefined ? undefined : ta - tb;
}

export function traitMatches(p: TraitPredicate, traits: Record<string, unknown>): boolean {
  const present = Object.prototype.hasOwnProperty.call(traits, p.name);
  const v = present ? traits[p.name] : undefined;
  switch (p.op) {
    case 'exists': return present;
    case 'notExists': return !present;
    case 'eq': return present && jsonEqual(v, p.value);
    case 'neq': return !(present && jsonEqual(v, p.value));
    case 'contains':
      if (typeof v === 'string') return typeof p.value === 'string' && v.includes(p.value);
      if (Array.isArray(v)) return v.some((x) => jsonEqual(x, p.value));
      return false;
    default: {
      if (!present) return false;
      const d = order(v, p.value);
      if (d === undefined) return false;
      return p.op === 'gt' ? d > 0 : p.op === 'gte' ? d >= 0 : p.op === 'lt' ? d < 0 : d <= 0;
    }
  }
}

/** `count` is the number of events of the predicate's name in its window, or at least `atLeast`. */
export const eventMatches = (p: EventPredicate, count: number) => (count >= p.atLeast) === (p.op === 'performed');

/**
 * The decision from traits alone, when it needs no event counts: true / false, or undefined when
 * the event predicates decide (then `finish` with their counts).
 */
export function traitPhase(c: Compiled, traits: Record<string, unknown>): boolean | undefined {
  const all = c.seg.definition.match === 'all';
  for (const p of c.traits) {
    const m = traitMatches(p, traits);
    if (all && !m) return false;
    if (!all && m) return true;
  }
  return c.events.length === 0 ? all : undefined;
}

/** The decision from the event predicates' counts (aligned with `c.events`), after `traitPhase`. */
export function finish(c: Compiled, counts: number[]): boolean {
  const all = c.seg.definition.match === 'all';
  for (let i = 0; i < c.events.length; i++) {
    const m = eventMatches(c.events[i]!, counts[i]!);
    if (all && !m) return false;
    if (!all && m) return true;
  }
  return all;
}

/** Whether the segment applies to a profile of this app and environment at all. */
export const applies = (c: Compiled, appId: string, environment: string) =>
  c.envs.has(environment) && (c.apps === null || c.apps.has(appId));

export function compile(seg: SegmentDef): Compiled {
  const d = seg.definition;
  const traits: TraitPredicate[] = [];
  const events: EventPredicate[] = [];
  for (const p of d.predicates) (p.kind === 'trait' ? traits : events).push(p as never);
  return {
    seg,
    apps: d.appId === null ? null : new Set(Array.isArray(d.appId) ? d.appId : [d.appId]),
    envs: new Set(seg.environments),
    traits, events,
    eventNames: new Set(events.map((e) => e.name)),
    windowed: events.some((e) => e.withinDays !== undefined),
  };
}

const NEEDS_VALUE = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains']);
const ORDERED = new Set(['gt', 'gte', 'lt', 'lte']);

/**
 * Applies defaults to a validated input definition and checks what the schema cannot: the ops
 * that compare need a `value`, and the ordering ops a number or an ISO date-time to compare with.
 * Returns the stored form, or a message naming the offending predicate.
 */
export function normalizeDefinition(input: any, at: string): { ok: Definition } | { error: string } {
  const predicates: Definition['predicates'] = [];
  const list = input.predicates as any[];
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    if (p.kind === 'trait') {
      const out: TraitPredicate = { kind: 'trait', name: p.name, op: p.op };
      if (NEEDS_VALUE.has(p.op) && !('value' in p)) return { error: `${at}/predicates/${i}: op ${p.op} needs a value` };
      if (ORDERED.has(p.op) && typeof p.value !== 'number' && instant(p.value) === undefined) {
        return { error: `${at}/predicates/${i}/value: op ${p.op} compares with a number or an ISO 8601 date-time` };
      }
      if ('value' in p) out.value = p.value;
      predicates.push(out);
    } else {
      const out: EventPredicate = { kind: 'event', name: p.name, op: p.op, atLeast: p.atLeast ?? 1 };
      if (p.withinDays !== undefined) out.withinDays = p.withinDays;
      predicates.push(out);
    }
  }
  return { ok: { match: input.match ?? 'all', appId: input.appId ?? null, predicates } };
}
