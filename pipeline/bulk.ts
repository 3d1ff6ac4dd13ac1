// The fast path of plain calls (track, and identify without held traits): one transaction for
// many calls of a batch, each step one statement for all of them (messageId claims, identifier
// locks and lookups, profile locks, new profiles and identifiers, trait writes, recorded answers).
// It gives each call the outcome the per-call path (process.ts `track` / `identify` + identity.ts
// `resolveProfile`) would give it run lane by lane in arrival order:
//   - claims first (a replay answers the original, whatever governance says now), then identity;
//   - a rejected call writes nothing (its messageId is only looked up, never claimed);
//   - identity is simulated call by call per lane on the identifier owners read under the same
//     locks resolveProfile takes (advisory locks per identifier in key order, then the profile rows
//     FOR UPDATE in id order, re-read when one was merged meanwhile). A call that would merge
//     profiles sends its whole lane back to the per-call path (the claims this transaction won for
//     the lane are withdrawn, so nothing of that lane is written here);
//   - an identify's answer is the profile as that call left it (later calls of the lane excluded).
// Lock order inside the transaction: messageId claims (sorted), advisory locks (sorted), profile
// rows (sorted), then the orgs' shared segment locks; the per-call path takes one claim, then
// advisory locks, then profile rows, then (recompute) the segment locks.
// Round trips: `BEGIN` and headwater_bulk_begin (claims, locks, owners, profiles, versions) in one
// simple query; the prior answers of replays when there are any; headwater_bulk_write with the
// `COMMIT` when no segment must be decided (else with the first recompute statement, then the
// transitions, then `COMMIT`).
import type pg from 'pg';
import { newId } from './ids.js';
import { iso, mergeInto, messageIdOf, messageKey, replay, storedKey, trackEvent } from './calls.js';
import { deferAll, deferrable, laterFor, reject, type Step, type TierOutput } from './step.js';
import { heldByProfile, identifiersOf, identKey, lockKey, pairs, profileResource, RESOLVE_ATTEMPTS, type IdentifierRow, type ProfileRow } from './identity.js';
import { jsonLiteral } from './store/postgres.js';
import { keepsHistory, recompute, refreshSegments, touchesSegments, versionArgs, type SegmentCache, type Touch } from './segments/mod.js';
import type { EventRecord, IdentifyBody, IngestCall, TrackBody } from './types.js';
import { ownersByOrg, type IdentityCache } from './identity-cache.js';
import { applyTo, changes, setsTraits, type Apply, type Plan } from './plans.js';

/** The tier's clients and caches. */
export interface BulkContext {
  pool: pg.Pool;
  segments: SegmentCache;
  /** No other transaction runs beside this one (embedded Postgres): nothing is locked. */
  serial: boolean;
  /** Taught the identifier owners the transaction read and wrote, once committed. */
  identities?: IdentityCache;
}

/** The calls of one transaction: lanes (indexes into `calls`, arrival order) with their plans. */
export interface BulkJob {
  calls: IngestCall[];
  lanes: number[][];
  plans: Map<number, Plan>;
}

/** A profile as the simulation sees it: who holds it, and (once an identify touched it) its state. */
interface Prof {
  id: string;
  userId: string | undefined;
  row?: ProfileRow;
  ids?: IdentifierRow[];
  /** Traits and consent patches applied here, in order (one shallow merge each). */
  patch?: Record<string, unknown>;
  consent?: Record<string, boolean>;
  touched?: boolean;
  created?: boolean;
}

/**
 * Applies lanes of plain calls (not promoted, not held, messageIds unique within the batch) in one
 * transaction. `plans` holds governance's decision for every call of the lanes. Lanes it cannot
 * take (a merge), or all of them after a data or concurrency error, are deferred: nothing of them
 * is written.
 */
export async function bulkApply(o: BulkContext, job: BulkJob): Promise<TierOutput> {
  const c = await o.pool.connect();
  const t: Tx = { open: false, committed: false, serial: o.serial, learn: o.identities !== undefined ? [] : undefined };
  try {
    const out = await apply(c, t, o.segments, job);
    if (!t.committed && t.open) await c.query(out.rollback ? 'ROLLBACK' : 'COMMIT');
    if (out.rollback) return deferAll(job.lanes.flat(), out.rollback);
    // Committed: what the transaction read and wrote of identifier owners holds at the versions it read.
    if (o.identities && t.learn) for (const l of t.learn) o.identities.learn(l.org, l.version, l.entries);
    return out;
  } catch (err) {
    if (t.open && !t.committed) await c.query('ROLLBACK').catch(() => {});
    // A value Postgres refuses (one call's; the per-call tier answers it 422), a deadlock or a
    // serialization failure: the calls go one by one.
    if (deferrable(err)) return deferAll(job.lanes.flat(), 'a shared statement failed');
    // An org of the chunk is being changed: its calls go back for later, the others call by call.
    const later = laterFor(err, job.lanes.flat(), (i) => job.calls[i]!.orgId);
    if (later) return later;
    throw err;
  } finally {
    c.release();
  }
}

/**
 * Whether this chunk's transaction was begun, and committed already (with its last statement).
 * `serial`: no other transaction can run beside it (embedded Postgres is one session), so it takes
 * no locks and stores new messageIds once, with their answers (see headwater_bulk_begin).
 */
interface Tx {
  open: boolean; committed: boolean; serial: boolean;
  /**
   * With an identity cache: the owners to teach it once committed, per org at the identity version
   * read by the statement's own snapshot, taken before headwater_bulk_begin's reads (its statements
   * take later ones): a version never newer than the owners it is learned with.
   */
  learn?: Array<{ org: string; version: number; entries: Array<[string, string]> }>;
}

/** What headwater_bulk_begin returns (migration 7). */
interface BeginResult {
  won: Array<[string, string, string]>;
  settled: boolean;
  owners: Array<[string, string, string, string, string]>;
  profiles: ProfileRow[];
  held: Array<[string, string, string, string]>;
  versions: Array<[string, number | string]>;
}

async function apply(c: pg.PoolClient, t: Tx, segments: SegmentCache, job: BulkJob): Promise<TierOutput & { rollback?: string }> {
  const { calls, lanes, plans } = job;
  const outcomes = new Map<number, Step>();
  const isTrack = (i: number) => calls[i]!.kind === 'track';
  const rejectOf = (i: number) => { const p = plans.get(i); return p && 'reject' in p ? p.reject : undefined; };
  const ids = (i: number) => (calls[i]!.body as TrackBody | IdentifyBody).identifiers;

  // 1. In one round trip: claim the messageIds of accepted calls (in key order), lock the
  //    identifiers of every accepted call (replays included: a few locks more, a statement less),
  //    read their owners and lock those profiles, and take the orgs' shared segment locks.
  const accepted: number[] = [];
  const refused: number[] = [];
  for (const lane of lanes) for (const i of lane) (rejectOf(i) ? refused : accepted).push(i);
  const claiming = accepted.filter((i) => messageIdOf(calls[i]!) !== undefined);
  const sorted = claiming.map((i) => [messageKey(calls[i]!), i] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const idents = new Map<string, { o: string; a: string; k: string; v: string }>();
  for (const i of accepted) {
    const call = calls[i]!;
    for (const [k, v] of pairs(ids(i))) {
      const key = identKey(call.orgId, call.appId, k, v);
      if (!idents.has(key)) idents.set(key, { o: call.orgId, a: call.appId, k, v });
    }
  }
  const list = [...idents.values()];
  const segOrgs = [...new Set(accepted.map((i) => calls[i]!.orgId))];
  const segKeys = t.serial ? [] : versionArgs(segOrgs)[1];
  t.open = true;
  const begun = await c.query(`BEGIN; SELECT headwater_bulk_begin(${jsonLiteral({
    serial: t.serial, attempts: RESOLVE_ATTEMPTS,
    claims: sorted.map(([, i]) => ({ o: calls[i]!.orgId, a: calls[i]!.appId, m: messageIdOf(calls[i]!), k: calls[i]!.kind })),
    // Serial: no lock is taken, so no lock key is computed.
    locks: t.serial ? [] : [...new Set(list.map((x) => lockKey(x.o, x.a, x.k, x.v)))],
    idents: list, segOrgs, segKeys,
  })}) AS r${t.learn ? `, headwater_identity_versions(ARRAY(SELECT jsonb_array_elements_text(${jsonLiteral(segOrgs)}::jsonb))) AS iv` : ''}`) as unknown as pg.QueryResult[];
  const b = begun[1]!.rows[0]!.r as BeginResult;
  const identityVersions: Array<[string, number | string]> | undefined = begun[1]!.rows[0]!.iv;
  if (!b.settled) return { steps: outcomes, system: [], rollback: 'identity resolution did not settle after concurrent merges' };
  const won = new Set<string>(b.won.map(([o, a, m]) => storedKey(o, a, m)));
  const wonBy = (i: number) => messageIdOf(calls[i]!) !== undefined && won.has(messageKey(calls[i]!));

  // 2. Calls claimed before (by anyone) answer the original; rejected calls too when claimed before.
  //    An identify answers the profile it landed on (or its survivor) as it is now.
  const priorOf = [...claiming.filter((i) => !wonBy(i)), ...refused.filter((i) => messageIdOf(calls[i]!) !== undefined)];
  const identifyReplays: Array<[number, string]> = [];
  const replaying = new Set<number>();
  if (priorOf.length) {
    const r = await c.query<{ org_id: string; app_id: string; message_id: string; result: any }>(
      `SELECT m.org_id, m.app_id, m.message_id, m.result FROM messages m
       JOIN unnest($1::text[], $2::text[], $3::text[]) AS t(o, a, id) ON m.org_id = t.o AND m.app_id = t.a AND m.message_id = t.id`,
      [priorOf.map((i) => calls[i]!.orgId), priorOf.map((i) => calls[i]!.appId), priorOf.map((i) => messageIdOf(calls[i]!))]);
    const prior = new Map(r.rows.map((row) => [storedKey(row.org_id, row.app_id, row.message_id), row.result]));
    for (const i of priorOf) {
      const p = prior.get(messageKey(calls[i]!));
      if (isTrack(i)) outcomes.set(i, rejectOf(i) && p === undefined ? reject(rejectOf(i)!) : replay(p));
      else if (p?.profileId) { identifyReplays.push([i, p.profileId]); replaying.add(i); }
      // Claimed but not answered yet (a concurrent first attempt): the per-call path applies the
      // identify again; so does this one (a rejected one is answered its rejection).
      else if (rejectOf(i)) outcomes.set(i, reject(rejectOf(i)!));
    }
  }
  for (const i of refused) if (!outcomes.has(i) && !replaying.has(i)) outcomes.set(i, reject(rejectOf(i)!));
  if (identifyReplays.length) {
    const answers = await liveProfiles(c, identifyReplays.map(([, id]) => id));
    for (const [i, id] of identifyReplays) {
      const a = answers.get(id);
      if (a) outcomes.set(i, { kind: 'ok', result: { status: 200, data: a } });
      else if (rejectOf(i)) outcomes.set(i, reject(rejectOf(i)!));
    }
  }

  // 3. The owners read in step 1, for the calls left.
  const live = lanes.map((lane) => lane.filter((i) => !outcomes.has(i))).filter((l) => l.length > 0);
  if (live.length === 0) return { steps: outcomes, system: [] };
  await refreshSegments(c, segments, b.versions);
  const held = heldByProfile(b.held);
  const profs = new Map<string, Prof>(b.profiles.map((row) => {
    const hs = held.get(row.id) ?? [];
    return [row.id, { id: row.id, userId: hs.find((i) => i.kind === 'userId')?.value, row, ids: hs }];
  }));
  const owner = new Map<string, Prof>();
  for (const [o, a, k, v, p] of b.owners) owner.set(identKey(o, a, k, v), profs.get(p)!);

  // 4. Each lane call by call, as resolveProfile would do it; a merge sends the lane back.
  const newIdents: Array<{ o: string; a: string; k: string; v: string; p: string; t: string }> = [];
  const landed: Array<[number, Prof]> = [];
  const created: Prof[] = [];
  const withdrawn: number[] = [];
  for (const lane of live) {
    const ownerHere = new Map<string, Prof>();
    const userHere = new Map<Prof, string>();
    const ownerOf = (k: string) => ownerHere.get(k) ?? owner.get(k);
    const userOf = (p: Prof) => userHere.get(p) ?? p.userId;
    const fresh: Prof[] = [];
    const idsHere: typeof newIdents = [];
    const lands: Array<[number, Prof]> = [];
    const answers = new Map<number, unknown>();
    const states = new Map<Prof, { row: ProfileRow; ids: IdentifierRow[]; patch?: Record<string, unknown>; consent?: Record<string, boolean>; touched: boolean }>();
    const stateOf = (p: Prof) => {
      let st = states.get(p);
      if (!st) states.set(p, (st = { row: { ...p.row! }, ids: [...p.ids!], patch: p.patch && { ...p.patch }, consent: p.consent && { ...p.consent }, touched: !!p.touched }));
      return st;
    };
    let merges = false;
    for (const i of lane) {
      const call = calls[i]!;
      const now = iso(call.receivedAt);
      const pr = pairs(ids(i));
      const keys = pr.map(([k, v]) => identKey(call.orgId, call.appId, k, v));
      const cands = [...new Set(keys.map(ownerOf).filter((p): p is Prof => p !== undefined))];
      if (cands.length > 1) { merges = true; break; }
      const callUser = ids(i).userId;
      let target: Prof | undefined = cands[0];
      // mergeGroup: a candidate of another user is not this call's profile; it gets its own.
      if (target !== undefined && callUser !== undefined && userOf(target) !== undefined && userOf(target) !== callUser) target = undefined;
      if (target === undefined) {
        target = {
          id: newId('prf'), userId: undefined, created: true, ids: [],
          row: { id: '', org_id: call.orgId, app_id: call.appId, source_id: call.sourceId, environment: call.environment, traits: {}, consent: {}, merged_into: null, created_at: now, updated_at: now },
        };
        target.row!.id = target.id;
        fresh.push(target);
      }
      const st = stateOf(target);
      // attach: ON CONFLICT DO NOTHING, so identifiers owned already stay where they are.
      const attached: IdentifierRow[] = [];
      pr.forEach(([k, v], j) => {
        if (ownerOf(keys[j]!) !== undefined) return;
        ownerHere.set(keys[j]!, target!);
        if (k === 'userId') userHere.set(target!, v);
        idsHere.push({ o: call.orgId, a: call.appId, k, v, p: target!.id, t: now });
        attached.push({ kind: k, value: v, created_at: now });
      });
      st.ids.push(...attached.sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.value < b.value ? -1 : 1)));
      if (call.kind === 'identify') {
        const plan = plans.get(i) as Apply;
        if (changes(plan)) {
          st.patch = mergeInto(st.patch ?? {}, plan.apply ?? {});
          if (plan.consent) st.consent = mergeInto(st.consent ?? {}, plan.consent) as Record<string, boolean>;
          applyTo(st.row, plan, call.receivedAt);
          st.touched = true;
        }
        answers.set(i, profileResource(st.row, [...st.ids]));
      }
      lands.push([i, target]);
    }
    if (merges) {
      for (const i of lane) outcomes.set(i, { kind: 'defer', reason: 'the lane merges profiles' });
      // Only the claims won here: a call claimed by someone else keeps their claim.
      withdrawn.push(...lane.filter(wonBy));
      continue;
    }
    for (const [k, p] of ownerHere) owner.set(k, p);
    for (const [p, u] of userHere) p.userId = u;
    for (const [p, st] of states) { p.row = st.row; p.ids = st.ids; p.patch = st.patch; p.consent = st.consent; p.touched = st.touched; }
    created.push(...fresh);
    newIdents.push(...idsHere);
    landed.push(...lands);
    for (const [i, data] of answers) outcomes.set(i, { kind: 'ok', result: { status: 200, data }, observe: true });
  }

  // 5. The writes, one statement; with the COMMIT when no segment is to be decided.
  const system: EventRecord[] = [];
  const recorded: Array<{ o: string; a: string; m: string; k: string; r: unknown }> = [];
  const history: Array<{ p: string; n: string; t: string }> = [];
  const touches: Touch[] = [];
  for (const [i, prof] of landed) {
    const call = calls[i]!;
    const identifyCall = call.kind === 'identify';
    touches.push({
      profileId: prof.id, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment, all: !!prof.created,
      ...(identifyCall ? { traitsChanged: setsTraits(plans.get(i) as Apply) } : { events: [(call.body as TrackBody).event] }),
    });
    if (identifyCall) {
      if (wonBy(i)) recorded.push({ o: call.orgId, a: call.appId, m: messageIdOf(call)!, k: call.kind, r: { profileId: prof.id } });
      continue;
    }
    const event = trackEvent(call, prof.id);
    recorded.push({ o: call.orgId, a: call.appId, m: event.messageId!, k: call.kind, r: { event } });
    // Only names the org's segments name (read under the shared lock above) keep history.
    if (keepsHistory(segments.peek(call.orgId), event.event)) history.push({ p: event.profileId, n: event.event, t: event.timestamp });
    outcomes.set(i, { kind: 'ok', result: { status: 201, data: event }, event, observe: true });
  }
  // Existing profiles an identify changed: the patches merge on the stored values, as the per-call
  // path's `traits || patch` does. New ones are born with the traits and consent of their identifies.
  const changed = [...new Set(landed.map(([, p]) => p))].filter((p) => p.touched && !p.created);
  if (t.learn && identityVersions) {
    const byOrg = ownersByOrg(b.owners, newIdents);
    for (const [org, ver] of identityVersions) t.learn.push({ org, version: Number(ver), entries: byOrg.get(org) ?? [] });
  }
  const decide = touchesSegments(segments, touches);
  const write = `SELECT headwater_bulk_write(${jsonLiteral({
    withdrawn: withdrawn.map((i) => ({ o: calls[i]!.orgId, a: calls[i]!.appId, m: messageIdOf(calls[i]!) })),
    created: created.map((p) => ({
      id: p.id, o: p.row!.org_id, a: p.row!.app_id, s: p.row!.source_id, e: p.row!.environment,
      tr: p.row!.traits, co: p.row!.consent, t: p.row!.created_at, u: p.row!.updated_at,
    })),
    changed: changed.map((p) => ({ id: p.id, tr: p.patch ?? {}, co: p.consent ?? {}, u: p.row!.updated_at })),
    idents: newIdents, recorded, history,
  })})`;
  if (!decide) {
    await c.query(`${write}; COMMIT`);
    t.committed = true;
    return { steps: outcomes, system };
  }
  // The writes travel with the first read of the decisions (they must see them).
  system.push(...await recompute(c, segments, touches, { locked: true, first: write }));
  return { steps: outcomes, system };
}

/** The Profile resources of the live profiles the given ids landed on (or were merged into). */
async function liveProfiles(c: pg.PoolClient, asked: string[]): Promise<Map<string, unknown>> {
  const r = await c.query<ProfileRow & { asked: string }>(
    `SELECT q.id AS asked, p.* FROM profiles q JOIN profiles p ON p.id = COALESCE(q.merged_into, q.id) WHERE q.id = ANY($1)`, [asked]);
  const held = await identifiersOf(c, [...new Set(r.rows.map((x) => x.id))]);
  return new Map(r.rows.map((row) => {
    const { asked: key, ...profile } = row;
    return [key, profileResource(profile, held.get(row.id)!)];
  }));
}
