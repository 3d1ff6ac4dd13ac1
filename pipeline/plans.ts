// Governance's decision for a plain call, taken up front (governance is pure) and carried to the
// tier that writes it (fast-track.ts, bulk.ts): a rejection, or for an identify the traits and
// consent it applies. Also how an identify's plan changes the profile row its answer shows.
import { callError } from '../schemas/errors.js';
import { iso, mergeInto, splitConsent } from './calls.js';
import { checkIdentify, checkTrack, type CatalogSnapshot } from './governance/mod.js';
import type { ProfileRow } from './identity.js';
import type { CallResult, IdentifyBody, IngestCall, TrackBody } from './types.js';

/** What an accepted call applies: for an identify, its traits and its consent (none held). */
export interface Apply { apply?: Readonly<Record<string, unknown>>; consent?: Record<string, boolean> }

/** What governance decided for a plain call: a rejection, or what it applies. */
export type Plan = { reject: CallResult } | Apply;

/** The call's plan on `snap`, or undefined when governance holds part of it (quarantine). */
export function planOf(snap: CatalogSnapshot, call: IngestCall): Plan | undefined {
  if (call.kind === 'track') {
    const v = checkTrack(snap, call.body as TrackBody, false);
    return v.kind === 'hold' ? undefined : v.kind === 'reject' ? { reject: callError(v.code, v.message) } : {};
  }
  const { traits, consent } = splitConsent((call.body as IdentifyBody).traits);
  const v = checkIdentify(snap, traits, false);
  if (v.kind === 'reject') return { reject: callError(v.code, v.message) };
  return Object.keys(v.held).length ? undefined : { apply: v.apply, consent };
}

/** Whether the identify sets traits (segments on traits decide again). */
export const setsTraits = (p: Apply): boolean => Object.keys(p.apply ?? {}).length > 0;

/** Whether the identify writes anything to its profile (traits, or consent). */
export const changes = (p: Apply): boolean => setsTraits(p) || p.consent !== undefined;

/**
 * The profile row as the identify leaves it (one shallow merge of its traits and consent, updated
 * at the call's time), in place; unchanged when the identify writes nothing.
 */
export function applyTo(row: ProfileRow, p: Apply, receivedAt: number): void {
  if (!changes(p)) return;
  row.traits = mergeInto({ ...row.traits }, p.apply ?? {});
  if (p.consent) row.consent = mergeInto({ ...row.consent }, p.consent) as Record<string, boolean>;
  row.updated_at = iso(receivedAt);
}
