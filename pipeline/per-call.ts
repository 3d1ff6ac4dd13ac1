// The per-call tier: one call in one transaction, as the contract defines a call's effects. The
// other tiers (fast-track.ts, bulk.ts) reproduce these outcomes for many calls at once and defer
// here whatever they cannot (merges, held values, promoted calls, a messageId used twice in a
// batch, a data error in a shared statement).
import type pg from 'pg';
import { newId } from './ids.js';
import { busyOrgOf, isBadData } from './store/errors.js';
import { tx } from './store/postgres.js';
import { callError } from '../schemas/errors.js';
import { resolveProfile, profileOut } from './identity.js';
import { iso, QUARANTINED, replay, splitConsent, trackEvent } from './calls.js';
import { reject, type Answered, type Later, type Step } from './step.js';
import { holdSegments, keepsHistory, recompute, type SegmentCache } from './segments/mod.js';
import { checkIdentify, checkTrack, holdCalls, type CatalogSnapshot, type SnapshotCache } from './governance/mod.js';
import type { CallResult, IdentifyBody, IngestCall, TrackBody } from './types.js';

export interface PerCallContext {
  pool: pg.Pool;
  snapshots: SnapshotCache;
  segments: SegmentCache;
  /** The catalog snapshot each org's calls are judged on; replaced when one proves stale. */
  snaps: Map<string, CatalogSnapshot>;
}

/** Judgements on a fresh snapshot before the call is answered `dependency_unavailable`. */
const STALE_ATTEMPTS = 4;

const QUARANTINED_RESULT: CallResult = { status: 200, data: QUARANTINED };

/**
 * Applies one call in its own transaction: an answer, or `later` when its org is being changed
 * (store/errors.ts `busy`: nothing written). Store outages throw.
 */
export async function applyOne(ctx: PerCallContext, call: IngestCall): Promise<Answered | Later> {
  for (let attempt = 1; ; attempt++) {
    const snap = ctx.snaps.get(call.orgId)!;
    let step: Step;
    try {
      step = call.kind === 'track' ? await track(ctx, snap, call) : await identify(ctx, snap, call);
    } catch (e) {
      // A value Postgres cannot store (e.g. a NUL character) is this call's fault alone: answer it
      // and keep the batch going. Anything else (a store outage) fails the batch for redelivery.
      if (isBadData(e)) return { kind: 'reject', result: callError('validation_failed', `body /data: ${(e as Error).message}`) };
      const busy = busyOrgOf(e);
      if (busy !== undefined) return { kind: 'later', orgId: busy };
      throw e;
    }
    if (step.kind !== 'retry' && step.kind !== 'defer') return step;
    if (attempt >= STALE_ATTEMPTS) return { kind: 'reject', result: callError('dependency_unavailable', 'catalog changed during processing; retry') };
    // The name was classified after the snapshot was taken: judge the call again on a fresh one.
    ctx.snapshots.invalidate(call.orgId);
    ctx.snaps.set(call.orgId, (await ctx.snapshots.get(ctx.pool, [call.orgId])).get(call.orgId)!);
  }
}

/** Runs `fn` in a transaction; nothing of a rejected call is written, a retried one is judged again from the start. */
const inTx = (pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<Step>): Promise<Step> =>
  tx(pool, fn, (step) => step.kind === 'ok' || step.kind === 'hold');

/** Claims the messageId; returns the stored answer when it was claimed before. */
async function claim(c: pg.PoolClient, call: IngestCall, messageId: string): Promise<{ prior?: any }> {
  const ins = await c.query(
    `INSERT INTO messages (org_id, app_id, message_id, kind, result) VALUES ($1, $2, $3, $4, '{}'::jsonb)
     ON CONFLICT DO NOTHING RETURNING 1`, [call.orgId, call.appId, messageId, call.kind]);
  if (ins.rowCount) return {};
  const r = await c.query('SELECT result FROM messages WHERE org_id = $1 AND app_id = $2 AND message_id = $3', [call.orgId, call.appId, messageId]);
  return { prior: r.rows[0]?.result ?? {} };
}

const record = (c: pg.PoolClient, call: IngestCall, messageId: string, result: unknown) =>
  c.query('UPDATE messages SET result = $4::jsonb WHERE org_id = $1 AND app_id = $2 AND message_id = $3',
    [call.orgId, call.appId, messageId, JSON.stringify(result)]);

async function track(ctx: PerCallContext, snap: CatalogSnapshot, call: IngestCall): Promise<Step> {
  const body = call.body as TrackBody;
  return inTx(ctx.pool, async (c) => {
    const { prior } = await claim(c, call, body.messageId);
    // A replay answers the original; only a promoted replay of a held call goes on to be written.
    if (prior && !(prior.status === 'quarantined' && call.promoted)) return replay(prior);
    const verdict = checkTrack(snap, body, !!call.promoted);
    if (verdict.kind === 'reject') return reject(callError(verdict.code, verdict.message));
    if (verdict.kind === 'hold') {
      const refused = await holdCalls(c, [{ orgId: call.orgId, kind: 'event', name: body.event, call }]);
      if (refused.length) return { kind: 'retry', reason: 'the name was classified after the snapshot' };
      await record(c, call, body.messageId, QUARANTINED);
      return { kind: 'hold', result: QUARANTINED_RESULT };
    }
    const now = iso(call.receivedAt);
    const { profile, created, merged } = await resolveProfile(c, { ...call, identifiers: body.identifiers, now });
    const event = trackEvent(call, profile.id);
    // The definitions current under the shared segment lock say whether the event keeps history.
    await holdSegments(c, ctx.segments, [call.orgId]);
    const history = keepsHistory(ctx.segments.peek(call.orgId), event.event);
    // The answer and the segment history row, one statement. created_at moves to this transaction:
    // a promoted call's claim is older, and recovery (landing.ts) finds unlanded events by it.
    await c.query(
      `WITH h AS (INSERT INTO event_history (profile_id, name, ts) SELECT $5::text, $6::text, $7::timestamptz WHERE $8::boolean)
       UPDATE messages SET result = $4::jsonb, created_at = now() WHERE org_id = $1 AND app_id = $2 AND message_id = $3`,
      [call.orgId, call.appId, body.messageId, JSON.stringify({ event }), event.profileId, event.event, event.timestamp, history]);
    const system = await recompute(c, ctx.segments, [{
      profileId: profile.id, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment,
      all: created || merged.length > 0, events: [body.event],
    }], { locked: true });
    return { kind: 'ok', result: { status: 201, data: event }, event, observe: true, system };
  });
}

async function identify(ctx: PerCallContext, snap: CatalogSnapshot, call: IngestCall): Promise<Step> {
  const body = call.body as IdentifyBody;
  return inTx(ctx.pool, async (c) => {
    if (body.messageId) {
      const { prior } = await claim(c, call, body.messageId);
      if (prior?.profileId && !call.promoted) {
        // The profile it landed on, or the survivor it was merged into since.
        const r = await c.query(`SELECT * FROM profiles WHERE id = COALESCE((SELECT merged_into FROM profiles WHERE id = $1), $1)`, [prior.profileId]);
        if (r.rows[0]) return { kind: 'ok', result: { status: 200, data: await profileOut(c, r.rows[0]) } };
      }
    }
    const { traits, consent } = splitConsent(body.traits);
    const verdict = checkIdentify(snap, traits, !!call.promoted);
    if (verdict.kind === 'reject') return reject(callError(verdict.code, verdict.message));
    const now = iso(call.receivedAt);
    const { profile, created, merged } = await resolveProfile(c, { ...call, identifiers: body.identifiers, now });
    let row = profile;
    const unset = body.unset?.filter((k) => Object.prototype.hasOwnProperty.call(profile.traits ?? {}, k)) ?? [];
    if (Object.keys(verdict.apply).length || consent || unset.length) {
      const r = await c.query(
        `UPDATE profiles SET traits = (traits - $5::text[]) || $2::jsonb, consent = consent || $3::jsonb, updated_at = $4 WHERE id = $1 RETURNING *`,
        [profile.id, JSON.stringify(verdict.apply), JSON.stringify(consent ?? {}), now, unset]);
      row = r.rows[0];
    }
    const heldNames = Object.keys(verdict.held);
    if (heldNames.length) {
      // One held value per trait name, replayed on promote as an identify of that trait alone.
      const refused = await holdCalls(c, heldNames.map((name) => ({
        orgId: call.orgId, kind: 'trait' as const, name,
        call: { ...call, id: newId('call'), body: { identifiers: body.identifiers, traits: { [name]: verdict.held[name] }, timestamp: body.timestamp } },
      })));
      if (refused.length) return { kind: 'retry', reason: 'a trait name was classified after the snapshot' };
    }
    if (body.messageId) await record(c, call, body.messageId, { profileId: row.id });
    const system = await recompute(c, ctx.segments, [{
      profileId: row.id, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment,
      all: created || merged.length > 0, traitsChanged: Object.keys(verdict.apply).length > 0 || unset.length > 0,
    }]);
    return { kind: 'ok', result: { status: 200, data: await profileOut(c, row) }, observe: true, system };
  });
}
