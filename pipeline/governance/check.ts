// Per-call governance decisions on the ingestion hot path: pure, no I/O, and no allocation in the
// common case (everything accepted).
import type { TrackBody } from '../types.js';
import { validateCanonicalTraits } from './canonical.js';
import type { CatalogSnapshot } from './types.js';

export type TrackDecision =
  | { kind: 'ok' }
  | { kind: 'reject'; code: 'event_denied'; message: string }
  | { kind: 'hold' };

export type IdentifyDecision =
  | { kind: 'reject'; code: 'trait_denied' | 'trait_validation_failed'; message: string }
  /** `apply` and `held` may be the caller's own object or a shared empty one: read them, never mutate. */
  | { kind: 'ok'; apply: Readonly<Record<string, unknown>>; held: Readonly<Record<string, unknown>> };

const OK: TrackDecision = Object.freeze({ kind: 'ok' });
const HOLD: TrackDecision = Object.freeze({ kind: 'hold' });
const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Denied wins over everything. Under `strict`, a name the catalog does not hold is held, unless the
 * call replays a promoted (held) value.
 */
export function checkTrack(snap: CatalogSnapshot, body: Pick<TrackBody, 'event'>, promoted: boolean): TrackDecision {
  const e = snap.events.get(body.event);
  if (e !== undefined) {
    return e.state === 'denied' ? { kind: 'reject', code: 'event_denied', message: `event "${body.event}" is denied` } : OK;
  }
  return snap.policy === 'strict' && !promoted ? HOLD : OK;
}

/**
 * Any denied trait name rejects the whole call; then the canonical formats are checked (held
 * values included, so a promote never replays a value that would fail). Under `strict`, trait
 * names the catalog does not hold go to `held` (unless promoted) and the rest to `apply`.
 * `consent` is not governed: when it is an object of booleans the caller removes it before calling.
 */
export function checkIdentify(snap: CatalogSnapshot, traits: Readonly<Record<string, unknown>>, promoted: boolean): IdentifyDecision {
  let unknown = 0;
  for (const name in traits) {
    if (!Object.hasOwn(traits, name)) continue;
    const t = snap.traits.get(name);
    if (t === undefined) unknown++;
    else if (t.state === 'denied') return { kind: 'reject', code: 'trait_denied', message: `trait "${name}" is denied` };
  }
  const bad = validateCanonicalTraits(traits);
  if (bad !== null) return { kind: 'reject', code: 'trait_validation_failed', message: bad.message };
  if (unknown === 0 || promoted || snap.policy !== 'strict') return { kind: 'ok', apply: traits, held: EMPTY };
  const apply: Record<string, unknown> = {};
  const held: Record<string, unknown> = {};
  for (const name in traits) {
    if (!Object.hasOwn(traits, name)) continue;
    // defineProperty: a trait named `__proto__` stays a plain member.
    Object.defineProperty(snap.traits.has(name) ? apply : held, name, { value: traits[name], enumerable: true, writable: true, configurable: true });
  }
  return { kind: 'ok', apply, held };
}
