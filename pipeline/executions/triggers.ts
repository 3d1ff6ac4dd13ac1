// The per-org trigger index: which enabled journeys an event name starts. Cached per org and
// reloaded only when the org's `journeys_version` moved (enable, disable, a new ready version), so
// deciding that no journey names an event costs a map lookup.
import type pg from 'pg';
import { durationMs } from '../../runtime/mod.js';
import type { EventRecord } from '../types.js';

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
}

interface OrgIndex { version: string; byName: Map<string, JourneyTrigger[]> }

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
    const fresh = new Map<string, OrgIndex>(stale.map(([id, v]) => [id, { version: String(v), byName: new Map() }]));
    for (const x of r.rows) {
      const m = x.manifest as { trigger?: { event?: string; segment?: string; on?: string }; purpose?: string; enrollment?: { cooldown?: string | number } };
      const t = m.trigger ?? {};
      const name = typeof t.event === 'string' ? t.event : t.on === 'exited' ? SEGMENT_EXITED : SEGMENT_ENTERED;
      const entry: JourneyTrigger = {
        key: x.key, versionId: x.id, releaseId: x.push_id, purpose: String(m.purpose ?? ''),
        cooldownMs: m.enrollment?.cooldown !== undefined ? durationMs(m.enrollment.cooldown) ?? 0 : 0,
        ...(typeof t.event !== 'string' && typeof t.segment === 'string' ? { segmentId: t.segment } : {}),
      };
      const idx = fresh.get(x.org_id)!;
      let list = idx.byName.get(name);
      if (!list) idx.byName.set(name, (list = []));
      list.push(entry);
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

  close(): void { this.orgs.clear(); }
}

const NONE: JourneyTrigger[] = [];
