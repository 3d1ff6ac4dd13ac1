// Segment definitions for the ingestion workers, per org, reloaded only when orgs.segments_version
// moved. Read inside the writing transaction under the org's shared segment lock: a create, update
// or delete takes that lock exclusively with its version bump, so a write either commits before it
// (and the new segment's backfill then sees the write) or reads the new version (and decides with it).
import type { Queryable } from '../governance/types.js';
import { advisoryKey } from '../store/postgres.js';
import { compile } from './predicates.js';
import type { Compiled, SegmentDef } from './types.js';

export interface OrgSegments {
  version: number;
  all: Compiled[];
  /** Segments with at least one trait predicate. */
  withTraits: Compiled[];
  /** Segments by the names of their event predicates. */
  byEvent: Map<string, Compiled[]>;
}

/** Signed 64-bit advisory lock key of an org's segment set. */
export function segmentLockKey(orgId: string): string {
  return advisoryKey(`segments\u0000${orgId}`);
}

export const segmentOf = (r: any): SegmentDef => ({
  id: r.id, orgId: r.org_id, name: r.name, definition: r.definition, environments: r.environments, version: r.version,
});

function index(version: number, segs: SegmentDef[]): OrgSegments {
  const all = segs.map(compile);
  const byEvent = new Map<string, Compiled[]>();
  for (const c of all) {
    for (const n of c.eventNames) {
      let l = byEvent.get(n);
      if (!l) byEvent.set(n, (l = []));
      l.push(c);
    }
  }
  return { version, all, withTraits: all.filter((c) => c.traits.length > 0), byEvent };
}

/** Owned by one worker (no module state); entries live as long as the cache. */
export class SegmentCache {
  private readonly byOrg = new Map<string, OrgSegments>();

  /** The definitions cached for an org, whatever their version. */
  peek(orgId: string): OrgSegments | undefined {
    return this.byOrg.get(orgId);
  }

  /** Loads the definitions of orgs at the versions just read (under their shared segment lock). */
  async reload(c: Queryable, versions: Array<[string, number]>): Promise<void> {
    if (versions.length === 0) return;
    const segs = await c.query('SELECT * FROM segments WHERE org_id = ANY($1) ORDER BY id', [versions.map((v) => v[0])]);
    for (const [id, v] of versions) this.byOrg.set(id, index(v, segs.rows.filter((x) => x.org_id === id).map(segmentOf)));
  }
}

/** Arguments of headwater_segment_versions(org_ids, lock_keys) (migration 5). */
export const versionArgs = (orgIds: string[]) => [orgIds, orgIds.map(segmentLockKey)];
