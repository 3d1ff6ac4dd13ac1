// Synchronous membership recompute of the profiles an ingestion transaction wrote, before the write
// is answered. Only segments the write can affect are decided: all of them for a new or merged
// profile, those with trait predicates when traits changed, those naming a tracked event. (Windows
// moving with time alone are the sweep's, jobs.ts.) Transitions emit system events, which are
// events of the profile too: segments naming them are decided again, up to CASCADE_ROUNDS rounds.
import type pg from 'pg';
import type { EventRecord } from '../types.js';
import type { SegmentCache } from './cache.js';
import { decide, transition, type Job } from './membership.js';
import type { Compiled, ProfileFacts } from './types.js';

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
  /** Its traits after the write, when the caller has them (else they are read). */
  traits?: Record<string, unknown>;
}

export const CASCADE_ROUNDS = 3;

export async function recompute(c: pg.PoolClient, cache: SegmentCache, touches: Touch[], nowMs = Date.now()): Promise<EventRecord[]> {
  if (touches.length === 0) return [];
  const orgs = await cache.lockAndGet(c, [...new Set(touches.map((t) => t.orgId))]);
  const out: EventRecord[] = [];
  let round = merged(touches);
  const known = new Map<string, Record<string, unknown>>(); // traits given or read so far
  for (let r = 0; r < CASCADE_ROUNDS && round.length; r++) {
    const jobs: Job[] = [];
    const needTraits: string[] = [];
    for (const t of round) {
      const o = orgs.get(t.orgId);
      if (!o || o.all.length === 0) continue;
      let segs: Compiled[];
      if (t.all) segs = o.all;
      else {
        const set = new Set<Compiled>(t.traitsChanged ? o.withTraits : []);
        for (const n of t.events ?? []) for (const s of o.byEvent.get(n) ?? []) set.add(s);
        segs = [...set];
      }
      if (segs.length === 0) continue;
      const facts: ProfileFacts = { id: t.profileId, orgId: t.orgId, appId: t.appId, sourceId: t.sourceId, environment: t.environment, traits: t.traits ?? {} };
      if (t.traits) known.set(t.profileId, t.traits);
      else if (segs.some((s) => s.traits.length > 0)) needTraits.push(t.profileId);
      jobs.push({ facts, segs });
    }
    if (jobs.length === 0) break;
    if (needTraits.length) {
      const rows = await c.query<{ id: string; traits: Record<string, unknown> }>('SELECT id, traits FROM profiles WHERE id = ANY($1)', [needTraits]);
      const byId = new Map(rows.rows.map((x) => [x.id, x.traits]));
      for (const [id, tr] of byId) known.set(id, tr);
      for (const j of jobs) if (byId.has(j.facts.id)) j.facts.traits = byId.get(j.facts.id)!;
    }
    const events = await transition(c, jobs, await decide(c, jobs, nowMs), nowMs);
    out.push(...events);
    // The next round: the system events just stored, as tracked events of their profiles.
    const next = new Map<string, Touch>();
    for (const e of events) {
      const t = next.get(e.profileId) ?? { profileId: e.profileId, orgId: e.orgId, appId: e.appId, sourceId: e.sourceId, environment: e.environment, events: [], traits: known.get(e.profileId) };
      t.events!.push(e.event);
      next.set(e.profileId, t);
    }
    round = [...next.values()];
  }
  return out;
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
    if (t.traits) m.traits = t.traits; // the later write's traits
  }
  return [...by.values()];
}
