// The fast path of track calls: when this thread already knows everything a lane of track calls
// depends on (every identifier's owner, one profile per lane; the org's catalog and segment
// definitions), the lane's calls are written in one statement, in one round trip with BEGIN and
// COMMIT when no segment watches their events (else the decisions follow in the same
// transaction): headwater_track_fast (migrations 8, 9 and 11) checks that the catalog, segment and
// identity versions the decision used are still current and the sources are live, then stores the
// messageIds with their answers and the new events' segment history. A messageId stored before
// answers its original (a replay), as on the other paths. When a check fails nothing is written,
// and the calls go to the general path (process.ts), which reads everything afresh and teaches the
// identity cache again (bulk.ts).
// Beside other transactions (a Postgres server) the statement first locks the lanes' profiles and
// takes the orgs' shared segment locks, as the bulk path does, so a merge or a segment change is
// either seen by its checks or waits for this transaction (migration 9 says why this suffices).
import type pg from 'pg';
import { messageKey, messageUses, replay, storedKey, trackEvent } from './calls.js';
import { deferrable, type Step, type TierOutput } from './step.js';
import { pairs } from './identity.js';
import { ownerKey, type IdentityCache } from './identity-cache.js';
import { lanesOf } from './lanes.js';
import { jsonLiteral } from './store/postgres.js';
import { checkTrack, type SnapshotCache } from './governance/mod.js';
import { recompute, touchesSegments, versionArgs, type SegmentCache, type Touch } from './segments/mod.js';
import type { EventRecord, IngestCall, TrackBody } from './types.js';

/** Nothing taken: every call goes to the next tier. */
const NONE = (): TierOutput => ({ steps: new Map(), system: [] });

export interface FastContext {
  pool: pg.Pool;
  snapshots: SnapshotCache;
  segments: SegmentCache;
  identities: IdentityCache;
  /** No other transaction runs beside this one (embedded Postgres): nothing needs locking. */
  serial: boolean;
}

type FastAnswer = { stale?: boolean; iv?: Array<[string, number | string]>; replays?: Array<[string, string, string, unknown]> };


interface OrgCheck { id: string; cv: number; sv: number; iv: number }

/** The profile every identifier of the call is known to belong to, if there is exactly one. */
function knownProfile(identities: IdentityCache, call: IngestCall): string | undefined {
  const known = identities.peek(call.orgId);
  if (known === undefined) return undefined;
  let profile: string | undefined;
  for (const [k, v] of pairs((call.body as TrackBody).identifiers)) {
    const p = known.owners.get(ownerKey(call.appId, k, v));
    if (p === undefined || (profile !== undefined && p !== profile)) return undefined;
    profile = p;
  }
  return profile;
}

/** Applies the lanes it can; the calls it gives no step are left to the next tier. */
export async function fastTrack(ctx: FastContext, calls: IngestCall[]): Promise<TierOutput> {
  // The versions each org's decisions are taken at (only orgs whose catalog, segments and
  // identities are all cached qualify).
  const orgs = new Map<string, OrgCheck>();
  for (const call of calls) {
    if (orgs.has(call.orgId) || call.kind !== 'track') continue;
    const snap = ctx.snapshots.peek(call.orgId);
    const segs = ctx.segments.peek(call.orgId);
    const ids = ctx.identities.peek(call.orgId);
    if (snap && segs && ids) orgs.set(call.orgId, { id: call.orgId, cv: snap.version, sv: segs.version, iv: ids.version });
  }
  if (orgs.size === 0) return NONE();
  const uses = messageUses(calls);
  const profileOf = new Map<number, string>();
  const eligible = (i: number): boolean => {
    const call = calls[i]!;
    if (call.kind !== 'track' || call.promoted || !orgs.has(call.orgId)) return false;
    const body = call.body as TrackBody;
    if (uses.get(messageKey(call)) !== 1) return false;
    if (checkTrack(ctx.snapshots.peek(call.orgId)!, body, false).kind !== 'ok') return false;
    const profile = knownProfile(ctx.identities, call);
    if (profile === undefined) return false;
    profileOf.set(i, profile);
    return true;
  };
  const fast: number[] = [];
  for (const lane of lanesOf(calls)) if (lane.every(eligible)) fast.push(...lane);
  if (fast.length === 0) return NONE();

  const events = new Map<number, EventRecord>();
  const rows = fast.map((i) => {
    const call = calls[i]!;
    const event = trackEvent(call, profileOf.get(i)!);
    events.set(i, event);
    return { o: call.orgId, a: call.appId, m: event.messageId, r: { event }, p: event.profileId };
  });
  const usedOrgs = [...new Set(fast.map((i) => calls[i]!.orgId))].map((id) => orgs.get(id)!);
  const sources = [...new Set(fast.map((i) => calls[i]!.sourceId))];
  const touchOf = (i: number): Touch => {
    const call = calls[i]!;
    return { profileId: profileOf.get(i)!, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment, all: false, events: [(call.body as TrackBody).event] };
  };
  // With no segment to decide, BEGIN, the statement and COMMIT travel together; otherwise the
  // decisions (segments/recompute.ts) follow in the same transaction, for the new events only.
  const decide = touchesSegments(ctx.segments, fast.map(touchOf));
  const segKeys = ctx.serial ? [] : versionArgs(usedOrgs.map((o) => o.id))[1];
  const write = `SELECT headwater_track_fast(${jsonLiteral({ lock: !ctx.serial, orgs: usedOrgs, segKeys, sources, rows })}) AS r`;
  let answer: FastAnswer;
  let system: EventRecord[] = [];
  /** The stored answers of replayed messageIds, by messageKey. */
  const prior = new Map<string, unknown>();
  const c = await ctx.pool.connect();
  try {
    try {
      const res = await c.query(`BEGIN; ${write}${decide ? '' : '; COMMIT'}`) as unknown as pg.QueryResult[];
      answer = res[1]!.rows[0]!.r;
      for (const [o, a, m, result] of answer.replays ?? []) prior.set(storedKey(o, a, m), result);
      if (decide) {
        if (!answer.stale) {
          const touches = fast.filter((i) => !prior.has(messageKey(calls[i]!))).map(touchOf);
          // The statement checked the segment versions: the cached definitions are current.
          system = await recompute(c, ctx.segments, touches, { locked: true });
        }
        await c.query(answer.stale ? 'ROLLBACK' : 'COMMIT');
      }
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      // A value Postgres refuses (a NUL in a string), or a deadlock with a writer that locks in
      // another order (the same messageId claimed at once elsewhere): the general path takes them,
      // as it takes the bulk path's.
      if (deferrable(e)) return NONE();
      throw e;
    }
  } finally {
    c.release();
  }
  if (answer.stale) {
    for (const [org, v] of answer.iv ?? []) {
      if (Number(v) !== orgs.get(org)?.iv) ctx.identities.reset(org, Number(v));
    }
    return NONE();
  }

  const steps = new Map<number, Step>();
  for (const i of fast) {
    const key = messageKey(calls[i]!);
    if (prior.has(key)) { steps.set(i, replay(prior.get(key))); continue; }
    const event = events.get(i)!;
    steps.set(i, { kind: 'ok', result: { status: 201, data: event }, event, observe: true });
  }
  return { steps, system };
}
