// Exit rules and goals at landing (docs/authoring.md, "Controls"), in the step that lands the
// events, before waits are answered and triggers start: an `exitOn` event of a profile ends its
// running or waiting execution of that journey (`cancelled`, `exitReason: "event:<name>"`); a goal
// event converts the profile's executions of that journey started within the goal's `within`
// before it (whatever their status, holdouts too) and, with `exit: true`, ends a running or
// waiting one (`completed`, `exitReason: "goal"`). Found through the (org, profile) index of
// executions; events that name neither cost a map lookup. An activation in progress has its
// outcome discarded, as on a cancel (its lease no longer matches).
import type pg from 'pg';
import { tx } from '../../pipeline/store/postgres.js';
import type { EventRecord } from '../../pipeline/types.js';
import type { JourneyGoal, TriggerIndex } from './triggers.js';

interface Hit { e: EventRecord; exits: string[]; goals: JourneyGoal[] }
interface Row { id: string; org_id: string; profile_id: string; journey_key: string; status: string; converted: boolean; started_at: Date }

/** Answers whether any execution ended. */
export async function applyExitsAndGoals(pool: pg.Pool, index: TriggerIndex, events: readonly EventRecord[]): Promise<boolean> {
  const hits: Hit[] = [];
  for (const e of events) {
    const exits = index.exitsOf(e.orgId, e.event);
    const goals = index.goalsOf(e.orgId, e.event);
    if (exits.length || goals.length) hits.push({ e, exits, goals });
  }
  if (hits.length === 0) return false;
  hits.sort((a, b) => Date.parse(a.e.receivedAt) - Date.parse(b.e.receivedAt));
  const keys = new Set<string>();
  let maxWithin = 0;
  for (const h of hits) {
    h.exits.forEach((k) => keys.add(k));
    for (const g of h.goals) { keys.add(g.key); maxWithin = Math.max(maxWithin, g.withinMs); }
  }
  const pairs = new Map<string, [string, string]>();
  for (const h of hits) pairs.set(`${h.e.orgId}\u0000${h.e.profileId}`, [h.e.orgId, h.e.profileId]);
  const pl = [...pairs.values()];
  const earliest = Date.parse(hits[0]!.e.receivedAt) - maxWithin;
  return tx(pool, async (c) => {
    // Locked in id order, as answerWaits and the runner's save lock them.
    const rows = (await c.query<Row>(
      `SELECT x.id, x.org_id, x.profile_id, x.journey_key, x.status, x.converted, x.started_at FROM executions x
       JOIN unnest($1::text[], $2::text[]) AS p(org_id, profile_id) ON x.org_id = p.org_id AND x.profile_id = p.profile_id
       WHERE x.journey_key = ANY($3::text[]) AND (x.status IN ('running', 'waiting') OR (NOT x.converted AND x.started_at >= $4::timestamptz))
       ORDER BY x.id FOR UPDATE OF x`,
      [pl.map((p) => p[0]), pl.map((p) => p[1]), [...keys], new Date(earliest).toISOString()])).rows;
    const ends: Array<{ id: string; status: string; reason: string }> = [];
    const conversions: Array<{ id: string; at: string }> = [];
    for (const x of rows) {
      let active = x.status === 'running' || x.status === 'waiting';
      let converted = x.converted;
      const start = new Date(x.started_at).getTime();
      for (const h of hits) {
        if (h.e.orgId !== x.org_id || h.e.profileId !== x.profile_id) continue;
        const at = Date.parse(h.e.receivedAt);
        if (at < start) continue;
        const g = h.goals.find((y) => y.key === x.journey_key);
        if (g && !converted && at - start <= g.withinMs) {
          converted = true;
          conversions.push({ id: x.id, at: h.e.receivedAt });
          if (g.exit && active) { ends.push({ id: x.id, status: 'completed', reason: 'goal' }); active = false; }
        }
        if (active && h.exits.includes(x.journey_key)) { ends.push({ id: x.id, status: 'cancelled', reason: `event:${h.e.event}` }); active = false; }
      }
    }
    if (conversions.length) {
      await c.query(
        `UPDATE executions x SET converted = true, converted_at = t.at, updated_at = now()
         FROM unnest($1::text[], $2::timestamptz[]) AS t(id, at) WHERE x.id = t.id`,
        [conversions.map((v) => v.id), conversions.map((v) => v.at)]);
    }
    if (ends.length) {
      await c.query(
        `UPDATE executions x SET status = t.status, exit_reason = t.reason, wait = NULL, wake_value = NULL, wake_at = NULL,
           timer_deadline = NULL, lease_until = NULL, lease_id = NULL, inbox = '[]'::jsonb, ended_at = now(), updated_at = now()
         FROM unnest($1::text[], $2::text[], $3::text[]) AS t(id, status, reason) WHERE x.id = t.id`,
        [ends.map((v) => v.id), ends.map((v) => v.status), ends.map((v) => v.reason)]);
    }
    return ends.length > 0;
  });
}
