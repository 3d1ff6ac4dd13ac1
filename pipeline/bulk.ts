// The fast path of track calls: one transaction for many calls of a batch, each step one statement
// for all of them (messageId claims, identifier locks and lookups, profile locks, new profiles and
// identifiers, recorded answers). It gives each call the outcome the per-call path (process.ts
// `track` + identity.ts `resolveProfile`) would give it run lane by lane in arrival order:
//   - claims first (a replay answers the original, whatever governance says now), then identity;
//   - a rejected call writes nothing (its messageId is only looked up, never claimed);
//   - identity is simulated call by call per lane on the identifier owners read under the same
//     locks resolveProfile takes (advisory locks per identifier in key order, then the profile rows
//     FOR UPDATE in id order, re-read when one was merged meanwhile). A call that would merge
//     profiles sends its whole lane back to the per-call path (its claims are withdrawn in this
//     transaction, so nothing of that lane is written here).
// Lock order inside the transaction: messageId claims (sorted), advisory locks (sorted), profile
// rows (sorted); the per-call path takes one claim, then advisory locks, then profile rows.
import type pg from 'pg';
import { newId } from './ids.js';
import { identKey, lockKey, pairs, RESOLVE_ATTEMPTS } from './identity.js';
import { tx } from './store/postgres.js';
import { recompute, type SegmentCache, type Touch } from './segments/mod.js';
import type { CallResult, EventRecord, IngestCall, TrackBody } from './types.js';

export interface CallOutcome {
  result: CallResult;
  event?: EventRecord;
  observe?: boolean;
  stale?: boolean;
  /** Segment transitions the call caused (system events, in the outbox). */
  system?: EventRecord[];
}

export interface BulkOutput {
  /** Answers of the calls settled here (committed with the transaction). */
  outcomes: Map<number, CallOutcome>;
  /** Lanes (call indexes in arrival order) left to the per-call path: nothing of them was written. */
  perCall: number[][];
  /** Segment transitions of the profiles written here (system events, in the outbox). */
  system: EventRecord[];
}

/** The chunk cannot be applied in bulk (nothing was written): run its calls on the per-call path. */
export class BulkFallback extends Error {}

/** Errors after which the chunk's calls are retried one by one: data errors (one call's fault, the
 * per-call path answers it 422), deadlocks and serialization failures. */
export function fallsBack(e: unknown): boolean {
  if (e instanceof BulkFallback) return true;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code === '40P01' || code === '40001');
}

export const QUARANTINED = { status: 'quarantined' };
export const iso = (ms: number) => new Date(ms).toISOString();
const messageKey = (c: IngestCall) => `${c.orgId}\u0000${c.appId}\u0000${(c.body as TrackBody).messageId}`;

/** The answer of a track call whose messageId was claimed before (process.ts `track`, not promoted). */
export function replay(prior: any): CallOutcome {
  if (prior?.status === 'quarantined') return { result: { status: 200, data: QUARANTINED } };
  if (prior?.event) return { result: { status: 200, data: prior.event }, event: prior.event };
  return { result: { status: 200, data: prior ?? {} } };
}

interface Prof { id: string; userId: string | undefined }

/**
 * Applies lanes of track calls (not promoted, not held, messageIds unique within the batch) in one
 * transaction. `rejected` holds the governance answer of the lanes' rejected calls.
 */
export function bulkTrack(pool: pg.Pool, segments: SegmentCache, calls: IngestCall[], lanes: number[][], rejected: Map<number, CallResult>): Promise<BulkOutput> {
  return tx(pool, (c) => apply(c, segments, calls, lanes, rejected));
}

async function apply(c: pg.PoolClient, segments: SegmentCache, calls: IngestCall[], lanes: number[][], rejected: Map<number, CallResult>): Promise<BulkOutput> {
  const outcomes = new Map<number, CallOutcome>();
  const body = (i: number) => calls[i]!.body as TrackBody;

  // 1. Claim the messageIds of accepted calls, in key order.
  const accepted: number[] = [];
  const refused: number[] = [];
  for (const lane of lanes) for (const i of lane) (rejected.has(i) ? refused : accepted).push(i);
  const sorted = accepted.map((i) => [messageKey(calls[i]!), i] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const won = new Set<string>();
  if (sorted.length) {
    const r = await c.query<{ org_id: string; app_id: string; message_id: string }>(
      `INSERT INTO messages (org_id, app_id, message_id, kind, result)
       SELECT o, a, m, 'track', '{}'::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS t(o, a, m)
       ON CONFLICT DO NOTHING RETURNING org_id, app_id, message_id`,
      [sorted.map(([, i]) => calls[i]!.orgId), sorted.map(([, i]) => calls[i]!.appId), sorted.map(([, i]) => body(i).messageId)]);
    for (const row of r.rows) won.add(`${row.org_id}\u0000${row.app_id}\u0000${row.message_id}`);
  }

  // 2. Calls claimed before (by anyone) answer the original; rejected calls too when claimed before.
  const priorOf = [...accepted.filter((i) => !won.has(messageKey(calls[i]!))), ...refused];
  if (priorOf.length) {
    const r = await c.query<{ org_id: string; app_id: string; message_id: string; result: unknown }>(
      `SELECT m.org_id, m.app_id, m.message_id, m.result FROM messages m
       JOIN unnest($1::text[], $2::text[], $3::text[]) AS t(o, a, id) ON m.org_id = t.o AND m.app_id = t.a AND m.message_id = t.id`,
      [priorOf.map((i) => calls[i]!.orgId), priorOf.map((i) => calls[i]!.appId), priorOf.map((i) => body(i).messageId)]);
    const prior = new Map(r.rows.map((row) => [`${row.org_id}\u0000${row.app_id}\u0000${row.message_id}`, row.result]));
    for (const i of priorOf) {
      const p = prior.get(messageKey(calls[i]!));
      if (rejected.has(i)) outcomes.set(i, p === undefined ? { result: rejected.get(i)! } : replay(p));
      else outcomes.set(i, replay(p));
    }
  }

  // 3. Identity for the calls claimed here: lock every identifier, read their owners, lock those.
  const live = lanes.map((lane) => lane.filter((i) => !outcomes.has(i))).filter((l) => l.length > 0);
  if (live.length === 0) return { outcomes, perCall: [], system: [] };
  const idents = new Map<string, { o: string; a: string; k: string; v: string }>();
  for (const lane of live) {
    for (const i of lane) {
      const call = calls[i]!;
      for (const [k, v] of pairs(body(i).identifiers)) {
        const key = identKey(call.orgId, call.appId, k, v);
        if (!idents.has(key)) idents.set(key, { o: call.orgId, a: call.appId, k, v });
      }
    }
  }
  const list = [...idents.values()];
  const lockKeys = [...new Set(list.map((x) => lockKey(x.o, x.a, x.k, x.v)))];
  await c.query('SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k ORDER BY k', [lockKeys]);

  const owner = new Map<string, Prof>();
  for (let attempt = 0; ; attempt++) {
    if (attempt >= RESOLVE_ATTEMPTS) throw new BulkFallback('identity resolution did not settle after concurrent merges');
    const found = await c.query<{ org_id: string; app_id: string; kind: string; value: string; profile_id: string }>(
      `SELECT i.org_id, i.app_id, i.kind, i.value, i.profile_id FROM identifiers i
       JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(o, a, k, v)
         ON i.org_id = t.o AND i.app_id = t.a AND i.kind = t.k AND i.value = t.v`,
      [list.map((x) => x.o), list.map((x) => x.a), list.map((x) => x.k), list.map((x) => x.v)]);
    const profileIds = [...new Set(found.rows.map((r) => r.profile_id))];
    owner.clear();
    if (profileIds.length === 0) break;
    const locked = await c.query<{ id: string; merged_into: string | null }>(
      'SELECT id, merged_into FROM profiles WHERE id = ANY($1) ORDER BY id FOR UPDATE', [profileIds]);
    if (locked.rows.length !== profileIds.length || locked.rows.some((p) => p.merged_into !== null)) continue; // merged meanwhile
    const uids = await c.query<{ profile_id: string; value: string }>(
      `SELECT profile_id, value FROM identifiers WHERE profile_id = ANY($1) AND kind = 'userId'`, [profileIds]);
    const profs = new Map<string, Prof>(profileIds.map((id) => [id, { id, userId: undefined }]));
    for (const u of uids.rows) profs.get(u.profile_id)!.userId = u.value;
    for (const r of found.rows) owner.set(identKey(r.org_id, r.app_id, r.kind, r.value), profs.get(r.profile_id)!);
    break;
  }

  // 4. Each lane call by call, as resolveProfile would do it; a merge sends the lane back.
  const newProfiles: Array<{ id: string; o: string; a: string; s: string; e: string; t: string }> = [];
  const newIdents: Array<{ o: string; a: string; k: string; v: string; p: string; t: string }> = [];
  const landed: Array<[number, string]> = [];
  const perCall: number[][] = [];
  const withdrawn: number[] = [];
  for (const lane of live) {
    const ownerHere = new Map<string, Prof>();
    const userHere = new Map<Prof, string>();
    const ownerOf = (k: string) => ownerHere.get(k) ?? owner.get(k);
    const userOf = (p: Prof) => userHere.get(p) ?? p.userId;
    const profs: typeof newProfiles = [];
    const ids: typeof newIdents = [];
    const lands: Array<[number, string]> = [];
    let merges = false;
    for (const i of lane) {
      const call = calls[i]!;
      const now = iso(call.receivedAt);
      const pr = pairs(body(i).identifiers);
      const keys = pr.map(([k, v]) => identKey(call.orgId, call.appId, k, v));
      const cands = [...new Set(keys.map(ownerOf).filter((p): p is Prof => p !== undefined))];
      if (cands.length > 1) { merges = true; break; }
      const callUser = body(i).identifiers.userId;
      let target: Prof | undefined = cands[0];
      // mergeGroup: a candidate of another user is not this call's profile; it gets its own.
      if (target !== undefined && callUser !== undefined && userOf(target) !== undefined && userOf(target) !== callUser) target = undefined;
      if (target === undefined) {
        target = { id: newId('prf'), userId: undefined };
        profs.push({ id: target.id, o: call.orgId, a: call.appId, s: call.sourceId, e: call.environment, t: now });
      }
      // attach: ON CONFLICT DO NOTHING, so identifiers owned already stay where they are.
      pr.forEach(([k, v], j) => {
        if (ownerOf(keys[j]!) !== undefined) return;
        ownerHere.set(keys[j]!, target!);
        if (k === 'userId') userHere.set(target!, v);
        ids.push({ o: call.orgId, a: call.appId, k, v, p: target!.id, t: now });
      });
      lands.push([i, target.id]);
    }
    if (merges) { perCall.push(lane); withdrawn.push(...lane); continue; }
    for (const [k, p] of ownerHere) owner.set(k, p);
    for (const [p, u] of userHere) p.userId = u;
    newProfiles.push(...profs);
    newIdents.push(...ids);
    landed.push(...lands);
  }

  // 5. Writes, one statement each.
  if (withdrawn.length) {
    await c.query(
      `DELETE FROM messages m USING unnest($1::text[], $2::text[], $3::text[]) AS t(o, a, id)
       WHERE m.org_id = t.o AND m.app_id = t.a AND m.message_id = t.id`,
      [withdrawn.map((i) => calls[i]!.orgId), withdrawn.map((i) => calls[i]!.appId), withdrawn.map((i) => body(i).messageId)]);
  }
  if (newProfiles.length) {
    await c.query(
      `INSERT INTO profiles (id, org_id, app_id, source_id, environment, created_at, updated_at)
       SELECT id, o, a, s, e, t::timestamptz, t::timestamptz
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS x(id, o, a, s, e, t)`,
      [newProfiles.map((x) => x.id), newProfiles.map((x) => x.o), newProfiles.map((x) => x.a), newProfiles.map((x) => x.s),
        newProfiles.map((x) => x.e), newProfiles.map((x) => x.t)]);
  }
  if (newIdents.length) {
    const r = await c.query(
      `INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
       SELECT o, a, k, v, p, t::timestamptz
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS x(o, a, k, v, p, t)
       ON CONFLICT DO NOTHING`,
      [newIdents.map((x) => x.o), newIdents.map((x) => x.a), newIdents.map((x) => x.k), newIdents.map((x) => x.v),
        newIdents.map((x) => x.p), newIdents.map((x) => x.t)]);
    // Every one was read absent under its advisory lock: a conflict means someone attached without it.
    if (r.rowCount !== newIdents.length) throw new BulkFallback('an identifier appeared under its lock');
  }
  const system: EventRecord[] = [];
  if (landed.length) {
    const recs: string[] = [];
    const written: EventRecord[] = [];
    const created = new Set(newProfiles.map((p) => p.id));
    const touches: Touch[] = [];
    for (const [i, profileId] of landed) {
      const call = calls[i]!;
      const b = body(i);
      const now = iso(call.receivedAt);
      const event: EventRecord = {
        id: newId('evt'), orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, profileId,
        environment: call.environment, event: b.event, properties: b.properties ?? {},
        timestamp: b.timestamp ? new Date(b.timestamp).toISOString() : now, receivedAt: now, messageId: b.messageId,
      };
      recs.push(JSON.stringify({ event }));
      written.push(event);
      touches.push({ profileId, orgId: call.orgId, appId: call.appId, sourceId: call.sourceId, environment: call.environment, all: created.has(profileId), events: [b.event] });
      outcomes.set(i, { result: { status: 201, data: event }, event, observe: true });
    }
    // The answers and the segment history rows, one statement.
    await c.query(
      `WITH h AS (INSERT INTO event_history (profile_id, name, ts) SELECT * FROM unnest($5::text[], $6::text[], $7::timestamptz[]))
       UPDATE messages m SET result = x.r::jsonb FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(o, a, id, r)
       WHERE m.org_id = x.o AND m.app_id = x.a AND m.message_id = x.id`,
      [landed.map(([i]) => calls[i]!.orgId), landed.map(([i]) => calls[i]!.appId), landed.map(([i]) => body(i).messageId), recs,
        written.map((e) => e.profileId), written.map((e) => e.event), written.map((e) => e.timestamp)]);
    system.push(...await recompute(c, segments, touches));
  }
  return { outcomes, perCall, system };
}
