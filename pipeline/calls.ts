// Helpers every tier of the write path shares: messageId keys, the Event a track call writes, the
// answer of a replay, and consent split from traits.
import { newId } from './ids.js';
import type { Step } from './step.js';
import type { EventRecord, IngestCall, TrackBody } from './types.js';

export const QUARANTINED = { status: 'quarantined' };
export const iso = (ms: number) => new Date(ms).toISOString();
export const messageIdOf = (c: IngestCall) => (c.body as { messageId?: string }).messageId;
/** The key of a messageId: messageIds are unique per (org, app). */
export const storedKey = (orgId: string, appId: string, messageId: string | undefined) => `${orgId}\u0000${appId}\u0000${messageId}`;
/** A call's messageId key. */
export const messageKey = (c: IngestCall) => storedKey(c.orgId, c.appId, messageIdOf(c));

/** How many calls of the batch carry each messageId key (identify and track share the keys). */
export function messageUses(calls: IngestCall[]): Map<string, number> {
  const uses = new Map<string, number>();
  for (const call of calls) {
    if (typeof messageIdOf(call) !== 'string') continue;
    const k = messageKey(call);
    uses.set(k, (uses.get(k) ?? 0) + 1);
  }
  return uses;
}

/** The Event a track call writes on `profileId` (its timestamp defaults to receivedAt). */
export function trackEvent(call: IngestCall, profileId: string): EventRecord {
  const body = call.body as TrackBody;
  const now = iso(call.receivedAt);
  const e: EventRecord = {
    id: newId('evt'), orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, profileId,
    environment: call.environment, event: body.event, properties: body.properties ?? {},
    timestamp: body.timestamp ? new Date(body.timestamp).toISOString() : now, receivedAt: now, messageId: body.messageId,
  };
  if (body.context) e.context = body.context;
  return e;
}

/**
 * The answer of a track call whose messageId was claimed before (not promoted): the original. Its
 * event is emitted again, so that a redelivery after a crash still lands it (ClickHouse collapses
 * the copy by id).
 */
export function replay(prior: any): Step {
  if (prior?.status === 'quarantined') return { kind: 'ok', result: { status: 200, data: QUARANTINED } };
  if (prior?.event) return { kind: 'ok', result: { status: 200, data: prior.event }, event: prior.event };
  return { kind: 'ok', result: { status: 200, data: prior ?? {} } };
}

/** `consent`, when an object of booleans, is the profile's consent and not a trait. */
export function splitConsent(traits: Record<string, unknown> | undefined) {
  if (!traits) return { traits: {}, consent: undefined };
  const c = traits.consent;
  if (c && typeof c === 'object' && !Array.isArray(c) && Object.values(c).every((v) => typeof v === 'boolean')) {
    const { consent, ...rest } = traits;
    return { traits: rest, consent: consent as Record<string, boolean> };
  }
  return { traits, consent: undefined };
}

/** Copies own properties one by one: a trait named `__proto__` stays a plain member. */
export function mergeInto(target: Record<string, unknown>, src: Readonly<Record<string, unknown>>) {
  for (const k of Object.keys(src)) Object.defineProperty(target, k, { value: src[k], enumerable: true, writable: true, configurable: true });
  return target;
}
