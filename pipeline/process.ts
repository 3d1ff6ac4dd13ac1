// Applies a batch of ingestion calls to Postgres: source checks, messageId dedup, governance,
// identity resolution, trait writes, quarantine. Returns each call's answer and the events to land
// in ClickHouse. Steps return result unions (ok / reject / hold / replay) instead of throwing.
import type pg from 'pg';
import { newId } from './ids.js';
import { tx } from './store/postgres.js';
import { isBadData } from './store/errors.js';
import { callError } from '../schemas/errors.js';
import { resolveProfile, profileOut } from './identity.js';
import { bulkApply, fallsBack, iso, messageKey, messageUses, QUARANTINED, replay, trackEvent, type CallOutcome, type Plan } from './bulk.js';
import type { BatchOutcome, CallResult, EventRecord, IdentifyBody, IngestCall, TrackBody } from './types.js';
import { recompute, type SegmentCache } from './segments/mod.js';
import { lanesOf } from './lanes.js';
import { fastTrack } from './fast-track.js';
import type { IdentityCache } from './identity-cache.js';
import {
  checkIdentify, checkTrack, collectObservations, holdCalls, observe,
  type CatalogSnapshot, type OrgRow, type SnapshotCache,
} from './governance/mod.js';

export interface ProcessContext {
  pool: pg.Pool;
  snapshots: SnapshotCache;
  segments: SegmentCache;
  /** Calls processed at once (each in its own transaction); bounded by the pool size. */
  concurrency: number;
  /** No other transaction can run beside this context's (embedded Postgres: one session). */
  serial?: boolean;
  /** Identifier owners known to this thread: enables the track fast path (fast-track.ts). */
  identities?: IdentityCache;
}

interface SourceState { archived: boolean; appArchived: boolean }

const QUARANTINED_RESULT: CallResult = { status: 200, data: QUARANTINED };

export async function processBatch(ctx: ProcessContext, calls: IngestCall[]): Promise<BatchOutcome> {
  const identities = ctx.identities;
  const fast = identities ? await fastTrack({ ...ctx, identities, serial: !!ctx.serial }, calls) : undefined;
  if (!fast) return processCalls(ctx, calls);
  const results: CallResult[] = new Array(calls.length);
  const events: EventRecord[] = [];
  const outbox: string[] = [];
  for (const [i, o] of fast.outcomes) { results[i] = o.result; if (o.event) events.push(o.event); }
  for (const e of fast.system) { events.push(e); outbox.push(e.id); }
  if (fast.rest.length) {
    const sub = await processCalls(ctx, fast.rest.map((i) => calls[i]!));
    fast.rest.forEach((i, j) => { results[i] = sub.results[j]!; });
    events.push(...sub.events);
    outbox.push(...sub.outbox);
  }
  return { results, events, outbox };
}

async function processCalls(ctx: ProcessContext, calls: IngestCall[]): Promise<BatchOutcome> {
  const orgIds = [...new Set(calls.map((c) => c.orgId))];
  const sourceIds = [...new Set(calls.map((c) => c.sourceId))];
  // Per batch, not per call, in one statement: the orgs' catalog versions (snapshots are reloaded
  // only when one moved) and the archive state of every source (so an archived source is refused
  // at once, whatever the front end cached).
  const pre = await ctx.pool.query<{ orgs: OrgRow[]; sources: Array<[string, boolean, boolean]> }>(
    `SELECT (SELECT COALESCE(json_agg(json_build_object('id', o.id, 'catalog_version', o.catalog_version, 'settings', o.settings)), '[]')
             FROM orgs o WHERE o.id = ANY($1)) AS orgs,
            (SELECT COALESCE(json_agg(json_build_array(s.id, s.archived_at IS NOT NULL, a.status = 'archived')), '[]')
             FROM sources s JOIN apps a ON a.id = s.app_id WHERE s.id = ANY($2)) AS sources`, [orgIds, sourceIds]);
  const snaps = await ctx.snapshots.at(ctx.pool, pre.rows[0]!.orgs);
  const sources = new Map<string, SourceState>(pre.rows[0]!.sources.map(([id, archived, appArchived]) => [id, { archived, appArchived }]));

  const results: CallResult[] = new Array(calls.length);
  const events: EventRecord[] = [];
  const outbox: string[] = [];
  const observed: boolean[] = new Array(calls.length).fill(false);

  const sourceError = (call: IngestCall): CallResult | undefined => {
    const src = sources.get(call.sourceId);
    if (!src) return callError('not_found', 'source not found');
    if (src.archived) return callError('forbidden', 'the source is archived');
    if (src.appArchived) return callError('forbidden', 'the app of this source is archived');
    return undefined;
  };

  const one = async (call: IngestCall): Promise<CallOutcome> => {
    const refused = sourceError(call);
    if (refused) return { result: refused };
    for (let attempt = 0; ; attempt++) {
      const snap = snaps.get(call.orgId)!;
      let out: CallOutcome;
      try {
        out = call.kind === 'track' ? await track(ctx, snap, call) : await identify(ctx, snap, call);
      } catch (e) {
        // A value Postgres cannot store (e.g. a NUL character) is this call's fault alone: answer it
        // and keep the batch going. Anything else (a store outage) fails the batch for redelivery.
        if (isBadData(e)) return { result: callError('validation_failed', `body /data: ${(e as Error).message}`) };
        throw e;
      }
      if (!out.stale || attempt >= 3) return out.stale ? { result: callError('dependency_unavailable', 'catalog changed during processing; retry') } : out;
      // The name was classified after the snapshot was taken: judge the call again on a fresh one.
      ctx.snapshots.invalidate(call.orgId);
      snaps.set(call.orgId, (await ctx.snapshots.get(ctx.pool, [call.orgId])).get(call.orgId)!);
    }
  };
  const settle = (i: number, out: CallOutcome) => {
    results[i] = out.result;
    if (out.event) events.push(out.event);
    if (out.system) for (const e of out.system) { events.push(e); outbox.push(e.id); }
    if (out.observe) observed[i] = true;
  };

  // Calls that share an identifier form a lane and run in arrival order (one profile's writes never
  // reorder); lanes run concurrently. Lanes of plain calls (track and identify, not promoted,
  // nothing held, messageId used once in the batch) take the bulk path (bulk.ts): many calls per
  // transaction, one statement per step. The others run call by call, each in its own transaction.
  const lanes = lanesOf(calls);
  const { bulk, perCall, plans } = splitLanes(calls, lanes, snaps, sourceError, settle);

  const runLanes = async (list: number[][], width: number) => {
    let next = 0;
    const worker = async () => {
      while (next < list.length) {
        for (const i of list[next++]!) settle(i, await one(calls[i]!));
      }
    };
    await Promise.all(Array.from({ length: Math.min(width, list.length) }, worker));
  };
  const fallback: number[][] = [];
  const bulkPhase = async () => {
    for (const chunk of chunksOf(bulk, BULK_CHUNK)) {
      let out;
      try {
        out = await bulkApply(ctx.pool, ctx.segments, calls, chunk, plans, !!ctx.serial, ctx.identities);
      } catch (e) {
        // Rolled back: the chunk's calls go one by one (a data error is then one call's 422).
        if (!fallsBack(e)) throw e;
        fallback.push(...chunk);
        continue;
      }
      for (const [i, o] of out.outcomes) settle(i, o);
      for (const e of out.system) { events.push(e); outbox.push(e.id); }
      fallback.push(...out.perCall);
    }
  };
  await Promise.all([bulkPhase(), runLanes(perCall, Math.max(1, ctx.concurrency - 1))]);
  await runLanes(fallback, ctx.concurrency);

  // Catalog observation once per org per batch, in arrival order; no write when nothing is new.
  const observations = new Map<string, IngestCall[]>();
  calls.forEach((call, i) => {
    if (!observed[i]) return;
    let list = observations.get(call.orgId);
    if (!list) observations.set(call.orgId, (list = []));
    list.push(call);
  });
  for (const [orgId, list] of observations) {
    await observe(ctx.pool, orgId, snaps.get(orgId)!, collectObservations(list));
  }
  return { results, events, outbox };
}

/** Calls per bulk transaction (lanes are never split). */
const BULK_CHUNK = 500;

function chunksOf(lanes: number[][], max: number): number[][][] {
  const out: number[][][] = [];
  let cur: number[][] = [];
  let n = 0;
  for (const lane of lanes) {
    if (n > 0 && n + lane.length > max) { out.push(cur); cur = []; n = 0; }
    cur.push(lane);
    n += lane.length;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Bulk lanes: track calls and identify calls with nothing to hold, none promoted, each messageId
 * used by one call of the batch. Calls of a refused source are answered here (they write nothing).
 * Governance is pure: its decisions (rejections, the traits and consent an identify applies) are
 * known up front and travel to the bulk transaction as plans.
 */
function splitLanes(calls: IngestCall[], lanes: number[][], snaps: Map<string, CatalogSnapshot>,
  sourceError: (call: IngestCall) => CallResult | undefined, settle: (i: number, out: CallOutcome) => void) {
  const uses = messageUses(calls);
  const bulk: number[][] = [];
  const perCall: number[][] = [];
  const plans = new Map<number, Plan>();
  const planOf = (call: IngestCall): Plan | undefined => {
    const snap = snaps.get(call.orgId)!;
    if (call.kind === 'track') {
      const v = checkTrack(snap, call.body as TrackBody, false);
      return v.kind === 'hold' ? undefined : v.kind === 'reject' ? { reject: callError(v.code, v.message) } : {};
    }
    const { traits, consent } = splitConsent((call.body as IdentifyBody).traits);
    const v = checkIdentify(snap, traits, false);
    if (v.kind === 'reject') return { reject: callError(v.code, v.message) };
    return Object.keys(v.held).length ? undefined : { apply: v.apply, consent };
  };
  for (const lane of lanes) {
    const lanePlans = new Map<number, Plan>();
    const plain = lane.every((i) => {
      const call = calls[i]!;
      if (sourceError(call)) return true;
      if (call.promoted) return false;
      if ((call.body as IdentifyBody).unset) return false;
      const m = (call.body as { messageId?: string }).messageId;
      if (call.kind === 'track' && typeof m !== 'string') return false;
      if (typeof m === 'string' && uses.get(messageKey(call)) !== 1) return false;
      const plan = planOf(call);
      if (plan) lanePlans.set(i, plan);
      return plan !== undefined;
    });
    if (!plain) { perCall.push(lane); continue; }
    const kept: number[] = [];
    for (const i of lane) {
      const refused = sourceError(calls[i]!);
      if (refused) { settle(i, { result: refused }); continue; }
      plans.set(i, lanePlans.get(i)!);
      kept.push(i);
    }
    if (kept.length) bulk.push(kept);
  }
  return { bulk, perCall, plans };
}


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

class Rollback { constructor(readonly outcome: CallOutcome) {} }

async function inTx(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<CallOutcome>): Promise<CallOutcome> {
  try {
    return await tx(pool, fn);
  } catch (e) {
    if (e instanceof Rollback) return e.outcome; // nothing of a rejected call is written
    throw e;
  }
}

async function track(ctx: ProcessContext, snap: CatalogSnapshot, call: IngestCall): Promise<CallOutcome> {
  const body = call.body as TrackBody;
  return inTx(ctx.pool, async (c) => {
    const { prior } = await claim(c, call, body.messageId);
    if (prior) {
      // A replay answers the original; its event is emitted again so that a redelivery after a
      // crash still lands it (ClickHouse collapses the duplicate by id).
      // Only a promoted replay of a held call goes on to be written.
      if (!(prior.status === 'quarantined' && call.promoted)) return replay(prior);
    }
    const verdict = checkTrack(snap, body, !!call.promoted);
    if (verdict.kind === 'reject') throw new Rollback({ result: callError(verdict.code, verdict.message) });
    if (verdict.kind === 'hold') {
      const refused = await holdCalls(c, [{ orgId: call.orgId, kind: 'event', name: body.event, call }]);
      if (refused.length) throw new Rollback({ result: QUARANTINED_RESULT, stale: true });
      await record(c, call, body.messageId, QUARANTINED);
      return { result: QUARANTINED_RESULT };
    }
    const now = iso(call.receivedAt);
    const { profile, created, merged } = await resolveProfile(c, { ...call, identifiers: body.identifiers, now });
    const event = trackEvent(call, profile.id);
    // The answer and the segment history row, one statement. created_at moves to this transaction:
    // a promoted call's claim is older, and recovery (landing.ts) finds unlanded events by it.
    await c.query(
      `WITH h AS (INSERT INTO event_history (profile_id, name, ts) VALUES ($5, $6, $7))
       UPDATE messages SET result = $4::jsonb, created_at = now() WHERE org_id = $1 AND app_id = $2 AND message_id = $3`,
      [call.orgId, call.appId, body.messageId, JSON.stringify({ event }), event.profileId, event.event, event.timestamp]);
    const system = await recompute(c, ctx.segments, [{
      profileId: profile.id, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment,
      all: created || merged.length > 0, events: [body.event],
    }]);
    return { result: { status: 201, data: event }, event, observe: true, system };
  });
}

/** `consent`, when an object of booleans, is the profile's consent and not a trait. */
function splitConsent(traits: Record<string, unknown> | undefined) {
  if (!traits) return { traits: {}, consent: undefined };
  const c = traits.consent;
  if (c && typeof c === 'object' && !Array.isArray(c) && Object.values(c).every((v) => typeof v === 'boolean')) {
    const { consent, ...rest } = traits;
    return { traits: rest, consent: consent as Record<string, boolean> };
  }
  return { traits, consent: undefined };
}

async function identify(ctx: ProcessContext, snap: CatalogSnapshot, call: IngestCall): Promise<CallOutcome> {
  const body = call.body as IdentifyBody;
  return inTx(ctx.pool, async (c) => {
    if (body.messageId) {
      const { prior } = await claim(c, call, body.messageId);
      if (prior?.profileId && !call.promoted) {
        // The profile it landed on, or the survivor it was merged into since.
        const r = await c.query(`SELECT * FROM profiles WHERE id = COALESCE((SELECT merged_into FROM profiles WHERE id = $1), $1)`, [prior.profileId]);
        if (r.rows[0]) return { result: { status: 200, data: await profileOut(c, r.rows[0]) } };
      }
    }
    const { traits, consent } = splitConsent(body.traits);
    const verdict = checkIdentify(snap, traits, !!call.promoted);
    if (verdict.kind === 'reject') throw new Rollback({ result: callError(verdict.code, verdict.message) });
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
      if (refused.length) throw new Rollback({ result: QUARANTINED_RESULT, stale: true });
    }
    if (body.messageId) await record(c, call, body.messageId, { profileId: row.id });
    const system = await recompute(c, ctx.segments, [{
      profileId: row.id, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment,
      all: created || merged.length > 0, traitsChanged: Object.keys(verdict.apply).length > 0 || unset.length > 0,
    }]);
    return { result: { status: 200, data: await profileOut(c, row) }, observe: true, system };
  });
}
