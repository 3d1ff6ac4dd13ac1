// Segment's calls mapped onto headwater's identify and track. Pure: what a call becomes, not how
// it is sent. Everything here is documented in the README ("Segment-compatible ingestion").
import { newId } from '../../pipeline/ids.js';
import type { CallKind } from '../../pipeline/types.js';

export type SegmentType = 'identify' | 'track' | 'page' | 'screen' | 'group' | 'alias';
export const SEGMENT_TYPES: ReadonlySet<string> = new Set<SegmentType>(['identify', 'track', 'page', 'screen', 'group', 'alias']);

export const PAGE_EVENT = 'Page Viewed';
export const SCREEN_EVENT = 'Screen Viewed';
export const GROUP_EVENT = 'Group Identified';

/** One headwater call a Segment call becomes; `body` is still to be checked by the route's validator. */
export interface Mapped { kind: CallKind; body: Record<string, unknown> }
export type MapResult = { ok: true; calls: Mapped[] } | { ok: false; message: string };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Segment ids may be numbers; an empty string is no id. */
function id(v: unknown): string | undefined {
  if (typeof v === 'string') return v.length ? v : undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

function parseTime(v: unknown): number | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') return undefined;
  const ms = typeof v === 'number' ? v : Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

const MIN_MS = Date.UTC(1, 0, 1);
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * The timestamp to store. With `sentAt` (the client's clock when it sent), the client's clock skew is
 * removed: `receivedAt - (sentAt - timestamp)`. Without a parseable `timestamp`, undefined (the
 * pipeline then uses `receivedAt`); without a parseable `sentAt`, the timestamp as given.
 */
export function correctedTimestamp(timestamp: unknown, sentAt: unknown, receivedAt: number): string | undefined {
  const ts = parseTime(timestamp);
  if (ts === undefined) return undefined;
  const sent = parseTime(sentAt);
  const ms = sent === undefined ? ts : receivedAt - (sent - ts);
  return ms >= MIN_MS && ms <= MAX_MS ? new Date(ms).toISOString() : undefined;
}

export interface MapOptions {
  /** The call's own `sentAt`, else its batch's. */
  sentAt: unknown;
  receivedAt: number;
  /** Fills `context.ip` when the call has none (client SDKs' calls). */
  ip?: string;
}

/** The context kept with the call's event: the call's object, with `ip` filled when asked and absent. */
function contextOf(c: Record<string, unknown>, ip: string | undefined): Record<string, unknown> | undefined {
  const ctx = isObject(c.context) ? c.context : undefined;
  if (!ip || (ctx && ctx.ip !== undefined)) return ctx;
  return ctx ? { ...ctx, ip } : { ip };
}

/**
 * Maps one Segment call of `type`. A call that cannot be mapped (no identity, no event name, ...) is
 * `ok: false` with a message naming the field.
 */
export function mapCall(type: SegmentType, c: Record<string, unknown>, o: MapOptions): MapResult {
  const { sentAt, receivedAt } = o;
  const userId = id(c.userId);
  const anonymousId = id(c.anonymousId);
  const messageId = id(c.messageId) ?? newId('seg');
  const timestamp = correctedTimestamp(c.timestamp, sentAt, receivedAt);
  const identifiers: Record<string, string> = {};
  if (userId !== undefined) identifiers.userId = userId;
  if (anonymousId !== undefined) identifiers.anonymousId = anonymousId;
  const base = (extra: Record<string, unknown>) => {
    const body: Record<string, unknown> = { identifiers, messageId, ...extra };
    if (timestamp !== undefined) body.timestamp = timestamp;
    return body;
  };
  // Events carry the call's context; identify has no event to keep it with.
  const event = (name: unknown, properties: unknown) => {
    const body = base({ event: name, properties });
    const ctx = contextOf(c, o.ip);
    if (ctx) body.context = ctx;
    return body;
  };

  if (type === 'alias') {
    const previousId = id(c.previousId);
    if (userId === undefined) return { ok: false, message: 'alias /userId: is required' };
    if (previousId === undefined) return { ok: false, message: 'alias /previousId: is required' };
    // The same id twice: nothing to merge.
    if (previousId === userId) return { ok: true, calls: [] };
    // previousId is looked up as an anonymousId, so the anonymous profile merges into the user's
    // under the usual rules (two profiles that hold different userIds never merge).
    const body: Record<string, unknown> = { identifiers: { userId, anonymousId: previousId }, messageId };
    if (timestamp !== undefined) body.timestamp = timestamp;
    return { ok: true, calls: [{ kind: 'identify', body }] };
  }

  if (userId === undefined && anonymousId === undefined) return { ok: false, message: `${type} /userId: userId or anonymousId is required` };
  const traits = c.traits === undefined ? undefined : c.traits;
  const properties = c.properties === undefined ? {} : c.properties;

  switch (type) {
    case 'identify': {
      if (isObject(traits) && typeof traits.email === 'string' && traits.email.length > 0) identifiers.email = traits.email;
      return { ok: true, calls: [{ kind: 'identify', body: base(traits === undefined ? {} : { traits }) }] };
    }
    case 'track':
      return { ok: true, calls: [{ kind: 'track', body: event(c.event, properties) }] };
    case 'page':
    case 'screen': {
      const props = isObject(properties) ? { ...properties } : properties;
      if (isObject(props)) {
        if (typeof c.name === 'string' && c.name) props.name = c.name;
        if (typeof c.category === 'string' && c.category) props.category = c.category;
      }
      return { ok: true, calls: [{ kind: 'track', body: event(type === 'page' ? PAGE_EVENT : SCREEN_EVENT, props) }] };
    }
    case 'group': {
      const groupId = id(c.groupId);
      if (groupId === undefined) return { ok: false, message: 'group /groupId: is required' };
      const props = isObject(traits) ? { ...traits, groupId } : traits === undefined ? { groupId } : traits;
      const track: Mapped = { kind: 'track', body: event(GROUP_EVENT, props) };
      const identify: Mapped = { kind: 'identify', body: { ...base({ traits: { groupId } }), messageId: `${messageId}:group` } };
      return { ok: true, calls: [track, identify] };
    }
  }
}
