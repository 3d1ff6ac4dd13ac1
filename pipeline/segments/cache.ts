// Segment definitions for the ingestion workers, per org, reloaded only when orgs.segments_version
// moved. Read inside the writing transaction under the org's shared segment lock: a create, update
// or delete takes that lock exclusively with its version bump, so a write either commits before it
// (and the new segment's backfill then sees the write) or reads the new version (and decides with it).
import { createHash } from 'node:crypto';
import type pg from 'pg';
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
  return createHash('sha1').update(`segments\u0000${orgId}`).digest().readBigInt64BE(0).toString();
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

  /** Takes the orgs' shared segment locks in `c` (held to commit) and returns their definitions. */
  async lockAndGet(c: pg.PoolClient, orgIds: string[]): Promise<Map<string, OrgSegments>> {
    const out = new Map<string, OrgSegments>();
    if (orgIds.length === 0) return out;
    await c.query('SELECT pg_advisory_xact_lock_shared(k) FROM unnest($1::bigint[]) AS k ORDER BY k', [orgIds.map(segmentLockKey)]);
    // A new statement after the lock: it sees every version bump committed before the lock was granted.
    const r = await c.query<{ id: string; segments_version: string }>('SELECT id, segments_version FROM orgs WHERE id = ANY($1)', [orgIds]);
    const stale: Array<[string, number]> = [];
    for (const row of r.rows) {
      const v = Number(row.segments_version);
      const cached = this.byOrg.get(row.id);
      if (cached && cached.version === v) out.set(row.id, cached);
      else stale.push([row.id, v]);
    }
    if (stale.length) {
      const segs = await c.query('SELECT * FROM segments WHERE org_id = ANY($1) ORDER BY id', [stale.map((s) => s[0])]);
      for (const [id, v] of stale) {
        const o = index(v, segs.rows.filter((x) => x.org_id === id).map(segmentOf));
        this.byOrg.set(id, o);
        out.set(id, o);
      }
    }
    return out;
  }
}
