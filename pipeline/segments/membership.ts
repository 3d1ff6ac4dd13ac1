// Membership decisions and transitions, shared by ingestion (recompute.ts), backfills and sweeps
// (jobs.ts). Callers hold the profiles' rows locked (FOR UPDATE) in the transaction `c`, so the
// membership rows of a profile change under one writer at a time: every transition written here is
// real and emits exactly one system event.
import type pg from 'pg';
import type { Queryable } from '../governance/types.js';
import { newId } from '../ids.js';
import { inlineParams } from '../store/postgres.js';
import type { EventRecord, Environment } from '../types.js';
import { countEvents, ENTERED, EXITED, type CountSpec } from './history.js';
import { applies, finish, traitPhase } from './predicates.js';
import type { Compiled, ProfileFacts } from './types.js';


/** Key of one membership in the sets `transition` reads and is given. */
export const memberKey = (segmentId: string, profileId: string) => `${segmentId}\u0000${profileId}`;

/** One profile and the segments to decide for it. */
export interface Job { facts: ProfileFacts; segs: Compiled[] }

/** Which count each event predicate of each (job, segment) reads: `at[j][s]` (undefined: none). */
export interface CountPlan { specs: CountSpec[]; at: Array<Array<number[] | undefined>> }

/** Plans one count per (profile, name, window), read up to the largest atLeast asked of it. */
export function planCounts(jobs: Job[], wanted: (j: number, s: number) => boolean): CountPlan {
  const specs: CountSpec[] = [];
  const specAt = new Map<string, number>();
  const at = jobs.map((job, j) => job.segs.map((seg, s) => {
    if (seg.events.length === 0 || !wanted(j, s)) return undefined;
    return seg.events.map((p) => {
      const key = `${job.facts.id}\u0000${p.name}\u0000${p.withinDays ?? ''}`;
      let k = specAt.get(key);
      if (k === undefined) { k = specs.length; specAt.set(key, k); specs.push({ profileId: job.facts.id, name: p.name, withinDays: p.withinDays, limit: p.atLeast }); }
      else if (specs[k]!.limit < p.atLeast) specs[k]!.limit = p.atLeast;
      return k;
    });
  }));
  return { specs, at };
}

/** The trait phase of every (job, segment): false where the segment does not apply. */
export function traitPhases(jobs: Job[]): Array<Array<boolean | undefined>> {
  return jobs.map((job) => job.segs.map((seg) => (applies(seg, job.facts.appId, job.facts.environment) ? traitPhase(seg, job.facts.traits) : false)));
}

/** Final decisions from the trait phases and the planned counts. */
export function resolve(jobs: Job[], early: Array<Array<boolean | undefined>>, plan: CountPlan, counts: number[]): boolean[][] {
  return jobs.map((job, j) => job.segs.map((seg, s) => {
    const e = early[j]![s];
    if (e !== undefined) return e;
    return finish(seg, plan.at[j]![s]!.map((k) => counts[k]!));
  }));
}

/** Whether each job's profile belongs in each of its segments, now: counts only where traits did not decide. */
export async function decide(c: Queryable, jobs: Job[], nowMs: number): Promise<boolean[][]> {
  const early = traitPhases(jobs);
  const plan = planCounts(jobs, (j, s) => early[j]![s] === undefined);
  return resolve(jobs, early, plan, await countEvents(c, plan.specs, nowMs));
}

/**
 * Writes the difference between the stored memberships and `desired`, with one system event per
 * transition: stored in the profile's history and in the outbox in this transaction; the caller
 * publishes the returned events after commit and then clears them from the outbox. With `commit`,
 * the COMMIT travels with the writes (one round trip) when there is something to write.
 */
export async function transition(c: pg.PoolClient, jobs: Job[], desired: boolean[][], o: { nowMs: number; known?: Set<string>; commit?: boolean }): Promise<EventRecord[]> {
  const { nowMs, known } = o;
  const ids = [...new Set(jobs.map((j) => j.facts.id))];
  if (ids.length === 0) return [];
  let member = known;
  if (!member) {
    const segIds = [...new Set(jobs.flatMap((j) => j.segs.map((s) => s.seg.id)))];
    const cur = await c.query<{ segment_id: string; profile_id: string }>(
      'SELECT segment_id, profile_id FROM segment_members WHERE profile_id = ANY($1) AND segment_id = ANY($2)', [ids, segIds]);
    member = new Set(cur.rows.map((r) => memberKey(r.segment_id, r.profile_id)));
  }
  const members = member;
  const enter: Array<[Job, Compiled]> = [];
  const exit: Array<[Job, Compiled]> = [];
  const seen = new Set<string>();
  jobs.forEach((job, j) => job.segs.forEach((seg, s) => {
    const key = memberKey(seg.seg.id, job.facts.id);
    if (seen.has(key)) return; // a profile listed twice is decided once
    seen.add(key);
    const want = desired[j]![s]!;
    if (want && !members.has(key)) enter.push([job, seg]);
    else if (!want && members.has(key)) exit.push([job, seg]);
  }));
  if (enter.length === 0 && exit.length === 0) return [];
  const now = new Date(nowMs).toISOString();
  const events: EventRecord[] = [];
  const emit = (job: Job, seg: Compiled, name: string) => events.push({
    id: newId('evt'), orgId: job.facts.orgId, appId: job.facts.appId, sourceId: job.facts.sourceId, profileId: job.facts.id,
    environment: job.facts.environment as Environment, event: name,
    properties: { segmentId: seg.seg.id, segmentName: seg.seg.name }, timestamp: now, receivedAt: now, messageId: null,
  });
  for (const [job, seg] of enter) emit(job, seg, ENTERED);
  for (const [job, seg] of exit) emit(job, seg, EXITED);
  // One statement: memberships, the events' history rows and their outbox rows. The caller holds the
  // profiles' rows, so the memberships read in this transaction are current and every change applies;
  // one that did not (a writer that did not hold the profile) fails the statement as a serialization
  // failure (the caller runs again), in SQL, so that a COMMIT sent behind it never runs.
  const sql = `WITH ins AS (INSERT INTO segment_members (segment_id, org_id, profile_id, entered_at)
                  SELECT s, o, p, $4::timestamptz FROM unnest($1::text[], $2::text[], $3::text[]) AS t(s, o, p)
                  ON CONFLICT DO NOTHING RETURNING 1),
          del AS (DELETE FROM segment_members m USING unnest($5::text[], $6::text[]) AS t(s, p)
                  WHERE m.segment_id = t.s AND m.profile_id = t.p RETURNING 1),
          h AS (INSERT INTO event_history (profile_id, name, ts) SELECT * FROM unnest($7::text[], $8::text[], $9::timestamptz[])),
          o AS (INSERT INTO event_outbox (id, payload) SELECT * FROM unnest($10::text[], $11::text[])),
          n AS (SELECT (SELECT count(*) FROM ins)::int AS entered, (SELECT count(*) FROM del)::int AS exited)
     SELECT CASE WHEN entered <> $12::int OR exited <> $13::int THEN headwater_retry('segment memberships changed concurrently') END
     FROM n`;
  const params = [enter.map(([, s]) => s.seg.id), enter.map(([j]) => j.facts.orgId), enter.map(([j]) => j.facts.id), now,
    exit.map(([, s]) => s.seg.id), exit.map(([j]) => j.facts.id),
    events.map((e) => e.profileId), events.map((e) => e.event), events.map((e) => e.timestamp),
    events.map((e) => e.id), events.map((e) => JSON.stringify(e)), enter.length, exit.length];
  if (o.commit) await c.query(`${inlineParams(sql, params)};\nCOMMIT`);
  else await c.query(sql, params);
  return events;
}
