// What landing events means for journeys, once per landed batch (after the ClickHouse insert, before
// the batch is acknowledged, so a crash repeats it and every step here is idempotent):
// 1. waits: an event of a profile with a running or waiting execution answers a matching
//    waitForEvent, or goes to the inbox of an execution whose activation is in progress;
// 2. triggers: each event an enabled journey names starts an execution for its profile (./starts.ts).
// Before both, exit rules and goals end or convert the profile's executions (./exits.ts).
// One round trip decides both when nothing applies: the orgs' trigger index versions and the ids of
// the active executions of the batch's profiles.
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { tx } from '../../pipeline/store/postgres.js';
import type { EventRecord } from '../../pipeline/types.js';
import { applyExitsAndGoals } from './exits.js';
import { startExecutions } from './starts.js';
import type { TriggerIndex } from './triggers.js';

export interface LandedDeps {
  pool: pg.Pool;
  index: TriggerIndex;
  log: Logger;
  /** Told when executions started or waits were answered (the runner claims them at once). */
  notify(): void;
}

/** Events one inbox keeps per landed batch (an activation lasts seconds; this bounds a burst). */
const INBOX_PER_BATCH = 100;

export async function onEventsLanded(d: LandedDeps, events: readonly EventRecord[]): Promise<void> {
  if (events.length === 0) return;
  const orgIds = [...new Set(events.map((e) => e.orgId))];
  const pairs = new Map<string, [string, string]>();
  for (const e of events) pairs.set(`${e.orgId}\u0000${e.profileId}`, [e.orgId, e.profileId]);
  const pairList = [...pairs.values()];
  // The landed profiles' active executions in one index scan over the profile ids (an array), not a
  // probe per profile: with stale statistics (embedded Postgres analyzes itself every 15 s at most)
  // the planner turned the probes into a read of every active execution of the org and a hash join,
  // 7-11 ms per landed batch with ~10,000 running (0.7-1.2 ms this way, same data).
  const r = await d.pool.query<{ versions: Array<[string, string]>; active: string[] }>(
    `SELECT (SELECT COALESCE(json_agg(json_build_array(id, journeys_version::text)), '[]') FROM orgs WHERE id = ANY($1)) AS versions,
            (SELECT COALESCE(json_agg(x.id), '[]') FROM executions x
             WHERE x.org_id = ANY($1) AND x.profile_id = ANY($3::text[]) AND x.status IN ('running', 'waiting')
               AND (x.org_id, x.profile_id) IN (SELECT * FROM unnest($2::text[], $3::text[]) AS p(org_id, profile_id))) AS active`,
    [orgIds, pairList.map((p) => p[0]), pairList.map((p) => p[1])]);
  const { versions, active } = r.rows[0]!;
  let woke = false;
  await d.index.refresh(versions);
  // Exits and goals first (an exit event that a wait names ends the execution); then waits:
  // executions this batch starts have not run yet, so they wait for nothing.
  if (await applyExitsAndGoals(d.pool, d.index, events)) woke = true;
  if (active.length && await answerWaits(d.pool, active, events)) woke = true;
  const started = await startExecutions(d.pool, d.log, d.index, events);
  if (woke || started > 0) d.notify();
}

interface ActiveRow { id: string; org_id: string; profile_id: string; status: string; wait: WaitRecord | null; woken: boolean; leased: boolean }
export interface WaitRecord {
  kind: 'sleep' | 'event'; names?: string[]; until: number; position: number; call: unknown; began: number;
  /** The claim whose save recorded this wait with its journal (journeys/executions/resume.ts). */
  lease?: string;
}

/** The first event of `events` (in receive order) that answers `wait`, or undefined. */
export function answering(wait: WaitRecord, events: readonly EventRecord[]): EventRecord | undefined {
  if (wait.kind !== 'event' || !wait.names) return undefined;
  let best: EventRecord | undefined;
  for (const e of events) {
    if (!wait.names.includes(e.event) || Date.parse(e.receivedAt) < wait.began) continue;
    if (!best || Date.parse(e.receivedAt) < Date.parse(best.receivedAt)) best = e;
  }
  return best;
}

async function answerWaits(pool: pg.Pool, ids: string[], events: readonly EventRecord[]): Promise<boolean> {
  const byProfile = new Map<string, EventRecord[]>();
  for (const e of events) {
    const k = `${e.orgId}\u0000${e.profileId}`;
    let l = byProfile.get(k);
    if (!l) byProfile.set(k, (l = []));
    l.push(e);
  }
  return tx(pool, async (c) => {
    // Locked in id order (no deadlock between landing processes); the runner's save takes the same
    // row lock, so an event is either seen by the wait it registers or answers it here.
    const rows = (await c.query<ActiveRow>(
      `SELECT id, org_id, profile_id, status, wait, wake_value IS NOT NULL AS woken, (lease_until IS NOT NULL AND lease_until > now()) AS leased
       FROM executions WHERE id = ANY($1) AND status IN ('running', 'waiting') ORDER BY id FOR UPDATE`, [ids])).rows;
    let woke = false;
    for (const x of rows) {
      const evs = byProfile.get(`${x.org_id}\u0000${x.profile_id}`);
      if (!evs) continue;
      if (x.leased) {
        await c.query(`UPDATE executions SET inbox = inbox || $2::jsonb WHERE id = $1`, [x.id, JSON.stringify(evs.slice(0, INBOX_PER_BATCH))]);
        continue;
      }
      if (x.status !== 'waiting' || !x.wait || x.woken) continue;
      const hit = answering(x.wait, evs);
      if (!hit) continue;
      await c.query(`UPDATE executions SET wake_value = $2::jsonb, wake_at = now() WHERE id = $1`, [x.id, JSON.stringify(hit)]);
      woke = true;
    }
    return woke;
  });
}
