// Synchronous membership recompute of the profiles an ingestion transaction wrote, before the write
// is answered. Only segments the write can affect are decided: all of them for a new or merged
// profile, those with trait predicates when traits changed, those naming a tracked event. (Windows
// moving with time alone are the sweep's, jobs.ts.) Transitions emit system events, which are
// events of the profile too: segments naming them are decided again, up to CASCADE_ROUNDS rounds.
//
// Round trips matter more than anything here (embedded Postgres is one serialized session): the
// shared segment locks, the versions, the profiles' traits and memberships and every event count
// the decisions may need are one statement (which a caller may send with its writes: `planRead`);
// the transitions' writes are another, which may carry the COMMIT (`commit`).
import type pg from 'pg';
import type { EventRecord } from '../types.js';
import { versionArgs, type SegmentCache } from './cache.js';
import { inlineParams } from '../store/postgres.js';
import { countParams, countsSql, ENTERED, EXITED } from './history.js';
import { memberKey, planCounts, resolve, traitPhases, transition, type CountPlan, type Job } from './membership.js';
import { applies } from './predicates.js';
import type { Compiled } from './types.js';

/** A profile written by the transaction. */
export interface Touch {
  profileId: string;
  orgId: string;
  appId: string;
  /** Source of the write (system events carry it). */
  sourceId: string;
  environment: string;
  /** Created or merged by this write: every segment is decided. */
  all?: boolean;
  traitsChanged?: boolean;
  /** Names of events stored for it by this write. */
  events?: string[];
}

export const CASCADE_ROUNDS = 3;

export interface RecomputeOptions {
  /** The decisions' clock (ms); default now. */
  nowMs?: number;
  /** The transaction already holds the touched orgs' shared segment locks (see below). */
  locked?: boolean;
  /** A statement to run first, in the same round trip as the first read (see below). */
  first?: string;
  /**
   * The state of exactly these touches, read already in this transaction after its writes (`planRead`,
   * run in the writes' round trip): the first read is skipped.
   */
  read?: State;
  /**
   * End the transaction with COMMIT: with the last transition's writes when no segment of the touched
   * orgs names a transition's system event (nothing can cascade), else alone. Not with `first`.
   */
  commit?: boolean;
}

/**
 * `locked`: the transaction already holds the touched orgs' shared segment locks and `cache` has
 * their definitions at the versions read under them (bulk.ts does both in its first statement).
 * `first`: a statement to run before anything else, in the same round trip as the first read
 * (bulk.ts: its writes, whose effects the decisions must see).
 */
export async function recompute(client: pg.PoolClient, cache: SegmentCache, touches: Touch[], o: RecomputeOptions = {}): Promise<EventRecord[]> {
  if (o.commit && o.first !== undefined) throw new Error('recompute: commit with a first statement');
  const c = withFirst(client, o.first);
  let out: { events: EventRecord[]; committed: boolean };
  try {
    out = await decideAll(c, cache, touches, { nowMs: o.nowMs ?? Date.now(), locked: o.locked ?? false, read: o.read, commit: o.commit ?? false });
  } finally {
    await c.flush();
  }
  if (o.commit && !out.committed) await client.query('COMMIT');
  return out.events;
}

/**
 * A client whose next query carries `first` (a statement without parameters) in the same round
 * trip, as a simple query with the parameters inlined; `flush()` runs `first` alone if no query came.
 */
function withFirst(c: pg.PoolClient, first: string | undefined): pg.PoolClient & { flush(): Promise<void> } {
  let pending = first;
  const proxy = Object.create(c) as pg.PoolClient & { flush(): Promise<void> };
  proxy.query = (async (text: string, values?: unknown[]) => {
    if (pending === undefined) return c.query(text, values);
    const sql = `${pending};\n${inlineParams(text, values ?? [])}`;
    pending = undefined;
    const all = (await c.query(sql)) as unknown as pg.QueryResult[];
    return all[all.length - 1];
  }) as pg.PoolClient['query'];
  proxy.flush = async () => { if (pending !== undefined) { const s = pending; pending = undefined; await c.query(s); } };
  return proxy;
}

async function decideAll(c: pg.PoolClient, cache: SegmentCache, touches: Touch[], o: { nowMs: number; locked: boolean; read?: State; commit: boolean }): Promise<{ events: EventRecord[]; committed: boolean }> {
  const { nowMs, locked } = o;
  if (touches.length === 0) return { events: [], committed: false };
  const out: EventRecord[] = [];
  let round = merged(touches);
  let st = o.read ?? await readState(c, cache, round, { lockOrgs: locked ? [] : [...new Set(touches.map((t) => t.orgId))], nowMs });
  for (let r = 0; st.jobs.length > 0; r++) {
    const desired = resolve(st.jobs, traitPhases(st.jobs), st.plan, st.counts);
    // The last round when nothing can follow it: the COMMIT may travel with its writes.
    const last = r + 1 >= CASCADE_ROUNDS || !cascades(cache, st.jobs);
    const commit = o.commit && last;
    const events = await transition(c, st.jobs, desired, { nowMs, known: st.members, commit });
    out.push(...events);
    if (commit && events.length > 0) return { events: out, committed: true };
    if (events.length === 0 || r + 1 >= CASCADE_ROUNDS) break;
    // The next round: the system events just stored, as tracked events of their profiles.
    const next = new Map<string, Touch>();
    for (const e of events) {
      const t = next.get(e.profileId) ?? { profileId: e.profileId, orgId: e.orgId, appId: e.appId, sourceId: e.sourceId, environment: e.environment, events: [] };
      t.events!.push(e.event);
      next.set(e.profileId, t);
    }
    round = [...next.values()];
    st = await readState(c, cache, round, { lockOrgs: [], nowMs });
  }
  return { events: out, committed: false };
}

/** Whether a transition of these jobs could make another round: a segment of their orgs names a system event of transitions. */
function cascades(cache: SegmentCache, jobs: Job[]): boolean {
  for (const j of jobs) {
    const by = cache.peek(j.facts.orgId)?.byEvent;
    if (by && (by.has(ENTERED) || by.has(EXITED))) return true;
  }
  return false;
}

/** Whether any segment must be decided for these touches (with the cached definitions). */
export function touchesSegments(cache: SegmentCache, touches: Touch[]): boolean {
  return jobsOf(cache, touches).length > 0;
}

/**
 * Takes the orgs' shared segment locks and brings `cache` to the versions read under them: what a
 * write that decides later (`recompute` with `locked`) does first when it needs the definitions
 * before its own writes (which names keep history).
 */
export async function holdSegments(c: pg.PoolClient, cache: SegmentCache, orgIds: string[]): Promise<void> {
  const r = await c.query<{ v: Array<[string, number | string]> | null }>(
    'SELECT json_agg(json_build_array(org, ver)) AS v FROM headwater_segment_versions($1::text[], $2::bigint[])', versionArgs(orgIds));
  await refreshSegments(c, cache, r.rows[0]?.v ?? []);
}

/** Reloads the definitions of orgs whose version (read under their shared lock) moved; true when one did. */
export async function refreshSegments(c: pg.PoolClient, cache: SegmentCache, versions: Array<[string, number | string]>): Promise<boolean> {
  const stale: Array<[string, number]> = [];
  for (const [org, ver] of versions) {
    const v = Number(ver);
    if (cache.peek(org)?.version !== v) stale.push([org, v]);
  }
  if (stale.length) await cache.reload(c, stale);
  return stale.length > 0;
}

/** What the decisions of one round read: the jobs, their counts' plan and counts, the memberships held. */
export interface State { jobs: Job[]; plan: CountPlan; counts: number[]; members: Set<string> }

function jobsOf(cache: SegmentCache, touches: Touch[]): Job[] {
  const jobs: Job[] = [];
  for (const t of touches) {
    const o = cache.peek(t.orgId);
    if (!o || o.all.length === 0) continue;
    let segs: Compiled[];
    if (t.all) segs = o.all;
    else {
      const set = new Set<Compiled>(t.traitsChanged ? o.withTraits : []);
      for (const n of t.events ?? []) for (const s of o.byEvent.get(n) ?? []) set.add(s);
      segs = [...set];
    }
    segs = segs.filter((s) => applies(s, t.appId, t.environment));
    if (segs.length === 0) continue;
    jobs.push({ facts: { id: t.profileId, orgId: t.orgId, appId: t.appId, sourceId: t.sourceId, environment: t.environment, traits: {} }, segs });
  }
  return jobs;
}

/**
 * Traits, memberships and the counts of every event predicate of the jobs' segments (read even
 * where traits will decide: a second round trip costs more than a few bounded index reads). With
 * `lockOrgs`, the same statement takes their shared segment locks and reads their versions; orgs
 * whose definitions moved are reloaded and the state read again.
 */
async function readState(c: pg.PoolClient, cache: SegmentCache, touches: Touch[], o: { lockOrgs: string[]; nowMs: number }): Promise<State> {
  const { lockOrgs, nowMs } = o;
  let jobs = jobsOf(cache, touches);
  for (let attempt = 0; ; attempt++) {
    const lock = attempt === 0 && lockOrgs.length > 0;
    if (!lock && jobs.length === 0) return { jobs, plan: { specs: [], at: [] }, counts: [], members: new Set() };
    const q = stateQuery(jobs, nowMs, lock ? lockOrgs : []);
    const row = (await c.query<StateRow>(q.sql, q.args)).rows[0]!;
    if (lock) {
      if (await refreshSegments(c, cache, row.versions ?? [])) {
        jobs = jobsOf(cache, touches);
        continue; // the locks are held now: read the state for the current definitions
      }
    }
    const got = q.take(row);
    if (!Array.isArray(got)) return got;
    jobs = got; // plans index jobs: plan again for those whose profile was found
  }
}

interface StateRow { versions?: Array<[string, number | string]> | null; profiles: Array<[string, Record<string, unknown>, string[]]> | null; counts: number[][] }

/**
 * The statement reading the state of `jobs` (with `lockOrgs`, first their shared segment locks and
 * versions), and what its row gives: the state, or, when a job's profile was not found, the jobs
 * whose profiles were (the plan indexes jobs, so it is made again for them).
 */
function stateQuery(jobs: Job[], nowMs: number, lockOrgs: string[]): { sql: string; args: unknown[]; take(row: StateRow): State | Job[] } {
  const lock = lockOrgs.length > 0;
  const plan = planCounts(jobs, () => true);
  const ids = jobs.map((j) => j.facts.id);
  const at = lock ? 2 : 0; // parameters before the profile ids
  const cq = countParams(plan.specs, nowMs);
  const args: unknown[] = [...(lock ? versionArgs(lockOrgs) : []), ids, ...cq.args];
  const sql = `SELECT ${lock ? '(SELECT json_agg(json_build_array(org, ver)) FROM headwater_segment_versions($1::text[], $2::bigint[])) AS versions,' : ''}
         (SELECT json_agg(json_build_array(p.id, p.traits, ARRAY(SELECT m.segment_id FROM segment_members m WHERE m.profile_id = p.id)))
          FROM profiles p WHERE p.id = ANY($${at + 1}::text[])) AS profiles,
         ARRAY(${countsSql(at + 1)}) AS counts`;
  const take = (row: StateRow): State | Job[] => {
    const byId = new Map((row.profiles ?? []).map(([id, traits, segs]) => [id, { traits, segs }]));
    const members = new Set<string>();
    const kept: Job[] = [];
    for (const j of jobs) {
      const p = byId.get(j.facts.id);
      if (!p) continue;
      j.facts.traits = p.traits;
      for (const sid of p.segs) members.add(memberKey(sid, j.facts.id));
      kept.push(j);
    }
    return kept.length === jobs.length ? { jobs, plan, counts: cq.read(row.counts), members } : kept;
  };
  return { sql, args, take };
}

/**
 * The first read of `recompute` for `touches` as a statement to send with the writes that precede
 * it (one round trip fewer; the parameters inlined, for the simple-query protocol), and the state
 * its row gives to pass as `recompute`'s `read` when the touches decided are these. Undefined when
 * no segment is to be decided. The caller must hold the orgs' shared segment locks and `cache` the
 * definitions at the versions it holds (the fast path's statement checks both).
 */
export function planRead(cache: SegmentCache, touches: Touch[], nowMs: number): { sql: string; take(row: unknown): State | undefined } | undefined {
  const jobs = jobsOf(cache, merged(touches));
  if (jobs.length === 0) return undefined;
  const q = stateQuery(jobs, nowMs, []);
  return { sql: inlineParams(q.sql, q.args), take: (row) => { const got = q.take(row as StateRow); return Array.isArray(got) ? undefined : got; } };
}

/** One touch per profile: a profile written by several calls of a chunk is decided once. */
function merged(touches: Touch[]): Touch[] {
  const by = new Map<string, Touch>();
  for (const t of touches) {
    const m = by.get(t.profileId);
    if (!m) { by.set(t.profileId, { ...t, events: [...(t.events ?? [])] }); continue; }
    m.all = m.all || t.all;
    m.traitsChanged = m.traitsChanged || t.traitsChanged;
    m.events!.push(...(t.events ?? []));
  }
  return [...by.values()];
}
