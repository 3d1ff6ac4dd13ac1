// The per-org trigger index: which enabled journeys an event name starts. Cached per org and
// reloaded only when the org's `journeys_version` moved (enable, disable, a new ready version), so
// deciding that no journey names an event costs a map lookup.
import type pg from 'pg';
import { durationMs } from '../runtime/mod.js';
import { controlsOf } from '../definitions/mod.js';
import type { EventRecord } from '../../pipeline/types.js';

export const SEGMENT_ENTERED = 'system.segment_entered';
export const SEGMENT_EXITED = 'system.segment_exited';

export interface JourneyTrigger {
  key: string;
  versionId: string;
  releaseId: string;
  /** `{ segment, on }` triggers also require the event's `properties.segmentId`. */
  segmentId?: string;
  purpose: string;
  cooldownMs: number;
  /** Percent of entrants held out (0 when none). */
  holdout: number;
  throttle: { limit: number; perMs: number } | null;
  debounceMs: number;
}

/** A goal of an enabled journey, by the goal event's name. */
export interface JourneyGoal { key: string; withinMs: number; exit: boolean }

interface OrgIndex {
  version: string;
  byName: Map<string, JourneyTrigger[]>;
  /** Exit event name to the journeys it ends. */
  exits: Map<string, string[]>;
  goals: Map<string, JourneyGoal[]>;
}

export class TriggerIndex {
  private readonly orgs = new Map<string, OrgIndex>();

  constructor(private readonly pool: pg.Pool) {}

  /** Brings the orgs whose version moved up to date; `versions` as read with the batch. */
  async refresh(versions: Array<[string, string]>): Promise<void> {
    const stale = versions.filter(([id, v]) => this.orgs.get(id)?.version !== String(v));
    if (stale.length === 0) return;
    const r = await this.pool.query(
      `SELECT j.org_id, j.key, v.id, v.push_id, v.manifest
       FROM journeys j JOIN LATERAL (SELECT id, push_id, manifest FROM versions v WHERE v.org_id = j.org_id AND v.kind = 'journey'
         AND v.key = j.key AND v.status = 'ready' ORDER BY v.push_seq DESC LIMIT 1) v ON true
       WHERE j.org_id = ANY($1) AND j.enabled`, [stale.map(([id]) => id)]);
    const fresh = new Map<string, OrgIndex>(stale.map(([id, v]) => [id, { version: String(v), byName: new Map(), exits: new Map(), goals: new Map() }]));
    for (const x of r.rows) {
      const m = x.manifest as { trigger?: { event?: string; segment?: string; on?: string }; purpose?: string; enrollment?: { cooldown?: string | number } };
      const t = m.trigger ?? {};
      const c = controlsOf(m);
      const name = typeof t.event === 'string' ? t.event : t.on === 'exited' ? SEGMENT_EXITED : SEGMENT_ENTERED;
      const entry: JourneyTrigger = {
        key: x.key, versionId: x.id, releaseId: x.push_id, purpose: String(m.purpose ?? ''),
        cooldownMs: m.enrollment?.cooldown !== undefined ? durationMs(m.enrollment.cooldown) ?? 0 : 0,
        holdout: c.holdout, throttle: c.throttle, debounceMs: c.debounceMs,
        ...(typeof t.event !== 'string' && typeof t.segment === 'string' ? { segmentId: t.segment } : {}),
      };
      const idx = fresh.get(x.org_id)!;
      let list = idx.byName.get(name);
      if (!list) idx.byName.set(name, (list = []));
      list.push(entry);
      for (const n of c.exitOn) push(idx.exits, n, x.key);
      if (c.goal) push(idx.goals, c.goal.event, { key: x.key, withinMs: c.goal.withinMs, exit: c.goal.exit });
    }
    for (const [id, idx] of fresh) this.orgs.set(id, idx);
  }

  /** The journeys `e` starts (after refresh of its org). */
  match(e: EventRecord): JourneyTrigger[] {
    const list = this.orgs.get(e.orgId)?.byName.get(e.event);
    if (!list) return NONE;
    return list.some((t) => t.segmentId !== undefined)
      ? list.filter((t) => t.segmentId === undefined || t.segmentId === (e.properties as { segmentId?: unknown })?.segmentId)
      : list;
  }

  /** The journeys an event of this name ends for its profile (after refresh of its org). */
  exitsOf(orgId: string, name: string): string[] { return this.orgs.get(orgId)?.exits.get(name) ?? NO_KEYS; }

  /** The journeys whose goal is an event of this name (after refresh of its org). */
  goalsOf(orgId: string, name: string): JourneyGoal[] { return this.orgs.get(orgId)?.goals.get(name) ?? NO_GOALS; }

  close(): void { this.orgs.clear(); }
}

function push<V>(m: Map<string, V[]>, k: string, v: V) {
  const l = m.get(k);
  if (l) l.push(v); else m.set(k, [v]);
}
const NO_KEYS: string[] = [];
const NO_GOALS: JourneyGoal[] = [];

const NONE: JourneyTrigger[] = [];
