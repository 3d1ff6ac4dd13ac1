// The fast path of track and identify calls: when this thread already knows everything a lane
// depends on (every identifier's owner, one profile per lane, or, for a lane of track calls, none
// of them owned as far as it knows: a new profile is proposed, migration 26; the org's catalog and
// segment definitions), the lane's calls are written in one statement, its own transaction when no
// segment watches them (else the decisions follow in the same transaction):
// headwater_track_fast (migrations 8, 9, 11, 26, 27, 33, 34, 36 and 37) checks that the catalog, segment and
// identity versions the decision used are still current and the sources are live, then stores the
// messageIds with their answers, the new events' segment history (names a segment names) and the identifies' trait and
// consent patches. A track's messageId stored before answers its original (a replay), as on the
// other paths; an identify's sends the batch to the general path, which answers the profile as it
// is. When a check fails nothing is written, and the calls go to the general path (process.ts),
// which reads everything afresh and teaches the identity cache again (bulk.ts).
// Beside other transactions (a Postgres server) the statement first locks the lanes' profiles and
// takes the orgs' shared segment locks, as the bulk path does, so a merge or a segment change is
// either seen by its checks or waits for this transaction (migration 9 says why this suffices).
import type pg from 'pg';
import { iso, mergeInto, messageIdOf, messageKey, messageUses, replay, storedKey, trackEvent } from './calls.js';
import { newId } from './ids.js';
import { deferrable, laterFor, type Step, type TierOutput } from './step.js';
import { heldByProfile, lockKey, pairs, profileResource, type ProfileRow } from './identity.js';
import { ownerKey, ownersByOrg, type IdentityCache } from './identity-cache.js';
import { lanesOf } from './lanes.js';
import { jsonLiteral } from './store/postgres.js';
import type { SnapshotCache } from './governance/mod.js';
import { applyTo, changes, planOf, setsTraits, type Apply } from './plans.js';
import { keepsHistory, planRead, recompute, touchesSegments, versionArgs, type SegmentCache, type Touch } from './segments/mod.js';
import type { EventRecord, IdentifyBody, IngestCall, TrackBody } from './types.js';

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

type FastAnswer = {
  stale?: boolean; iv?: Array<[string, number | string]>; replays?: Array<[string, string, string, unknown]>;
  deferred?: number[]; owners?: Array<[string, string, string, string, string]>;
  /** The profiles identifies landed on, before their patches, and their identifiers (migration 27). */
  profiles?: ProfileRow[]; held?: Array<[string, string, string, string]>;
};


interface OrgCheck { id: string; cv: number; sv: number; iv: number }

/** The profile every identifier of the call is known to belong to, if there is exactly one. */
function knownProfile(identities: IdentityCache, call: IngestCall): string | undefined {
  const known = identities.peek(call.orgId);
  if (known === undefined) return undefined;
  let profile: string | undefined;
  for (const [k, v] of pairs(call.body.identifiers)) {
    const p = known.owners.get(ownerKey(call.appId, k, v));
    if (p === undefined || (profile !== undefined && p !== profile)) return undefined;
    profile = p;
  }
  return profile;
}

/**
 * Whether the lane's calls all carry the same identifiers and this thread knows no owner of any of
 * them: first-seen identifiers, to be written with a new profile (or, owned after all, deferred).
 */
function unknownAlike(identities: IdentityCache, calls: IngestCall[], lane: number[]): boolean {
  const first = calls[lane[0]!]!;
  const known = identities.peek(first.orgId)!;
  const pr = pairs((first.body as TrackBody).identifiers);
  if (pr.some(([k, v]) => known.owners.has(ownerKey(first.appId, k, v)))) return false;
  const sig = signature(pr);
  return lane.slice(1).every((i) => signature(pairs((calls[i]!.body as TrackBody).identifiers)) === sig);
}

/** A call's identifiers as one comparable string. */
const signature = (pr: Array<[string, string]>) => pr.map(([k, v]) => `${k}\u0000${v}`).join('\u0001');

/**
 * The profiles proposed for lanes of first-seen identifiers, as the general path would create them:
 * born at the lane's first call (its source, environment and time), its identifiers attached then.
 */
class Born {
  readonly laneOf = new Map<number, number>();
  private readonly profiles: Array<{ n: number; id: string; o: string; a: string; s: string; e: string; t: string }> = [];
  private readonly ids: Array<{ n: number; o: string; a: string; k: string; v: string; p: string; t: string }> = [];
  private readonly locks: string[] = [];

  add(calls: IngestCall[], lane: number[], lock: boolean): string {
    const n = this.profiles.length;
    const call = calls[lane[0]!]!;
    const id = newId('prf');
    const t = iso(call.receivedAt);
    this.profiles.push({ n, id, o: call.orgId, a: call.appId, s: call.sourceId, e: call.environment, t });
    for (const [k, v] of pairs((call.body as TrackBody).identifiers)) {
      this.ids.push({ n, o: call.orgId, a: call.appId, k, v, p: id, t });
      if (lock) this.locks.push(lockKey(call.orgId, call.appId, k, v));
    }
    for (const i of lane) this.laneOf.set(i, n);
    return id;
  }

  /** The statement's arguments for them (none when there are none). */
  args() {
    return this.profiles.length ? { born: this.profiles, bornIds: this.ids, locks: this.locks } : {};
  }

  deferred(i: number, lanes: Set<number>): boolean {
    const n = this.laneOf.get(i);
    return n !== undefined && lanes.has(n);
  }

  /** Identifier owners to teach the cache, per org: those found, and those attached by lanes written. */
  learned(owners: Array<[string, string, string, string, string]>, deferred: Set<number>): Map<string, Array<[string, string]>> {
    return ownersByOrg(owners, this.ids.filter((x) => !deferred.has(x.n)));
  }
}

/** Applies the lanes it can; the calls it gives no step are left to the next tier. */
export async function fastTrack(ctx: FastContext, calls: IngestCall[]): Promise<TierOutput> {
  // The versions each org's decisions are taken at (only orgs whose catalog, segments and
  // identities are all cached qualify).
  const orgs = new Map<string, OrgCheck>();
  for (const call of calls) {
    if (orgs.has(call.orgId)) continue;
    const snap = ctx.snapshots.peek(call.orgId);
    const segs = ctx.segments.peek(call.orgId);
    const ids = ctx.identities.peek(call.orgId);
    if (snap && segs && ids) orgs.set(call.orgId, { id: call.orgId, cv: snap.version, sv: segs.version, iv: ids.version });
  }
  if (orgs.size === 0) return NONE();
  const uses = messageUses(calls);
  const profileOf = new Map<number, string>();
  // Once per call: a lane of unknown identifiers asks again after `eligible` gave up on it.
  const plainOf: Array<boolean | undefined> = new Array(calls.length);
  const plans = new Map<number, Apply>();
  // Nothing held or refused; a track's messageId used once here; an identify with nothing to unset,
  // its messageId (if any) used once here.
  const plain = (i: number): boolean => (plainOf[i] ??= ((call) => {
    if (call.promoted || !orgs.has(call.orgId)) return false;
    if (call.kind === 'track' ? uses.get(messageKey(call)) !== 1
      : (call.body as IdentifyBody).unset !== undefined || (messageIdOf(call) !== undefined && uses.get(messageKey(call)) !== 1)) return false;
    const plan = planOf(ctx.snapshots.peek(call.orgId)!, call);
    if (plan === undefined || 'reject' in plan) return false;
    if (call.kind === 'identify') plans.set(i, plan);
    return true;
  })(calls[i]!));
  const isTrack = (i: number) => calls[i]!.kind === 'track';
  const eligible = (i: number): boolean => {
    if (!plain(i)) return false;
    const profile = knownProfile(ctx.identities, calls[i]!);
    if (profile === undefined) return false;
    profileOf.set(i, profile);
    return true;
  };
  const fast: number[] = [];
  const born = new Born();
  for (const lane of lanesOf(calls)) {
    if (lane.every(eligible)) fast.push(...lane);
    else if (lane.every(isTrack) && lane.every(plain) && unknownAlike(ctx.identities, calls, lane)) {
      const id = born.add(calls, lane, !ctx.serial);
      for (const i of lane) profileOf.set(i, id);
      fast.push(...lane);
    }
  }
  if (fast.length === 0) return NONE();

  const events = new Map<number, EventRecord>();
  // Names that keep segment history (migration 33), as the definitions the statement checks say.
  const watch = new Set<string>();
  const rows = fast.filter(isTrack).map((i) => {
    const call = calls[i]!;
    const event = trackEvent(call, profileOf.get(i)!);
    events.set(i, event);
    if (keepsHistory(ctx.segments.peek(call.orgId), event.event)) watch.add(`${call.orgId}\u0001${event.event}`);
    const n = born.laneOf.get(i);
    return { o: call.orgId, a: call.appId, m: event.messageId, r: { event }, p: event.profileId, ...(n !== undefined ? { n } : {}) };
  });
  const usedOrgs = [...new Set(fast.map((i) => calls[i]!.orgId))].map((id) => orgs.get(id)!);
  const sources = [...new Set(fast.map((i) => calls[i]!.sourceId))];
  const touchOf = (i: number): Touch => {
    const call = calls[i]!;
    return {
      profileId: profileOf.get(i)!, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment,
      all: born.laneOf.has(i),
      ...(isTrack(i) ? { events: [(call.body as TrackBody).event] } : { traitsChanged: setsTraits(plans.get(i)!) }),
    };
  };
  const identifies = identifyArgs(calls, fast.filter((i) => !isTrack(i)), plans, profileOf);
  // With no segment to decide, the statement is the transaction; otherwise the decisions
  // (segments/recompute.ts) follow in the same transaction, for the new events only.
  const planned = fast.map(touchOf);
  const decide = touchesSegments(ctx.segments, planned);
  const segKeys = ctx.serial ? [] : versionArgs(usedOrgs.map((o) => o.id))[1];
  const arg = { lock: !ctx.serial, orgs: usedOrgs, segKeys, sources, rows, watch: [...watch], ...born.args(), ...identifies.args };
  let answer: FastAnswer;
  let system: EventRecord[] = [];
  /** The stored answers of replayed messageIds, by messageKey. */
  const prior = new Map<string, unknown>();
  /** New-profile lanes the statement left to the general path. */
  let deferred = new Set<number>();
  // Serialized before the connection is taken: embedded Postgres has one connection, which would
  // idle while this thread wrote ~1 KB of JSON per call.
  // With a segment to decide, BEGIN and the decisions' first read travel with the statement (one
  // round trip; the read sees its writes), so the argument goes as a literal, and the COMMIT goes
  // with the transitions' writes (recompute's `commit`): two round trips where there were four.
  // Otherwise the statement is its own transaction (no BEGIN or COMMIT) and the argument a bound
  // parameter (escaping it into the SQL text was ~6 % of the embedded main thread).
  const nowMs = Date.now();
  const read = decide ? planRead(ctx.segments, planned, nowMs) : undefined;
  const text = decide
    ? `BEGIN; SELECT headwater_track_fast(${jsonLiteral(arg)}) AS r${read ? `;\n${read.sql}` : ''}`
    : JSON.stringify(arg);
  const c = await ctx.pool.connect();
  try {
    try {
      let first: unknown;
      if (decide) {
        const res = await c.query(text) as unknown as pg.QueryResult[];
        answer = res[1]!.rows[0]!.r;
        first = res[2]?.rows[0];
      } else {
        answer = (await c.query<{ r: FastAnswer }>('SELECT headwater_track_fast($1::jsonb) AS r', [text])).rows[0]!.r;
      }
      for (const [o, a, m, result] of answer.replays ?? []) prior.set(storedKey(o, a, m), result);
      deferred = new Set(answer.deferred ?? []);
      if (decide) {
        if (answer.stale) await c.query('ROLLBACK');
        else {
          const decided = fast.filter((i) => !prior.has(messageKey(calls[i]!)) && !born.deferred(i, deferred));
          // The first read was planned for every call: it holds when none was left out (replayed or deferred).
          const whole = decided.length === fast.length;
          const state = whole && read && first !== undefined ? read.take(first) : undefined;
          // The statement checked the segment versions: the cached definitions are current.
          system = await recompute(c, ctx.segments, whole ? planned : decided.map(touchOf), { locked: true, nowMs, read: state, commit: true });
        }
      }
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      // A value Postgres refuses (a NUL in a string), or a deadlock with a writer that locks in
      // another order (the same messageId claimed at once elsewhere): the general path takes them,
      // as it takes the bulk path's.
      if (deferrable(e)) return NONE();
      // An org of the statement is being changed: its calls go back for later, the others on.
      const later = laterFor(e, fast, (i) => calls[i]!.orgId);
      if (later) return later;
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

  // Committed: the owners the statement found and the identifiers it attached hold at the org's
  // identity version it checked.
  for (const [org, entries] of born.learned(answer.owners ?? [], deferred)) ctx.identities.learn(org, orgs.get(org)!.iv, entries);
  const steps = new Map<number, Step>();
  identifies.answer(answer, steps);
  for (const i of fast) {
    if (!isTrack(i) || born.deferred(i, deferred)) continue;
    const key = messageKey(calls[i]!);
    if (prior.has(key)) { steps.set(i, replay(prior.get(key))); continue; }
    const event = events.get(i)!;
    steps.set(i, { kind: 'ok', result: { status: 201, data: event }, event, observe: true });
  }
  return { steps, system };
}

/**
 * The statement's arguments for the fast identifies (migration 27): the profiles they land on, each
 * one's patches merged in call order, their messageIds; and, from the profiles as the statement
 * read them, each identify's answer: its profile as that call left it (later calls excluded), as on
 * the other paths.
 */
function identifyArgs(calls: IngestCall[], list: number[], plans: Map<number, Apply>, profileOf: Map<number, string>) {
  if (list.length === 0) return { args: {}, answer: () => {} };
  const changed = new Map<string, { id: string; tr: Record<string, unknown>; co: Record<string, boolean>; u: string }>();
  const idents: Array<{ o: string; a: string; m: string; p: string }> = [];
  for (const i of list) {
    const call = calls[i]!;
    const plan = plans.get(i)!;
    const p = profileOf.get(i)!;
    const m = messageIdOf(call);
    if (m !== undefined) idents.push({ o: call.orgId, a: call.appId, m, p });
    if (!changes(plan)) continue;
    let c = changed.get(p);
    if (!c) changed.set(p, (c = { id: p, tr: {}, co: {}, u: '' }));
    mergeInto(c.tr, plan.apply ?? {});
    if (plan.consent) mergeInto(c.co, plan.consent);
    c.u = iso(call.receivedAt);
  }
  const read = [...new Set(list.map((i) => profileOf.get(i)!))];
  return {
    args: { read, changed: [...changed.values()], idents },
    answer(out: FastAnswer, steps: Map<number, Step>) {
      const rows = new Map((out.profiles ?? []).map((r) => [r.id, { ...r }]));
      const held = heldByProfile(out.held ?? []);
      for (const i of list) {
        const row = rows.get(profileOf.get(i)!)!;
        applyTo(row, plans.get(i)!, calls[i]!.receivedAt);
        steps.set(i, { kind: 'ok', result: { status: 200, data: profileResource(row, held.get(row.id) ?? []) }, observe: true });
      }
    },
  };
}
