// Catalog snapshots for the ingestion workers: loaded once, reused while orgs.catalog_version
// stays the same.
import type { CatalogEventEntry, CatalogSnapshot, CatalogTraitEntry, GovernanceState, Queryable } from './types.js';

export interface OrgRow { id: string; catalog_version: string | number; settings: { ingestionPolicy?: string } | null }

const ORGS = 'SELECT id, catalog_version, settings FROM orgs WHERE id = ANY($1)';

/** A plain record without a prototype, so a property named `constructor` or `__proto__` is just data. */
function bare(o: Record<string, string> | null | undefined): Record<string, string> {
  return Object.assign(Object.create(null) as Record<string, string>, o ?? {});
}

/** Builds the snapshots of the given org rows. Their version is read before the catalog, so a
 * change racing the load can only make the snapshot look older than it is (it is reloaded). */
async function build(q: Queryable, orgs: OrgRow[]): Promise<Map<string, CatalogSnapshot>> {
  const out = new Map<string, CatalogSnapshot>();
  for (const o of orgs) {
    out.set(o.id, {
      version: Number(o.catalog_version),
      policy: o.settings?.ingestionPolicy === 'strict' ? 'strict' : 'permissive',
      events: new Map<string, CatalogEventEntry>(),
      traits: new Map<string, CatalogTraitEntry>(),
    });
  }
  const ids = [...out.keys()];
  if (ids.length === 0) return out;
  const [ev, tr] = await Promise.all([
    q.query('SELECT org_id, name, state, properties FROM catalog_events WHERE org_id = ANY($1)', [ids]),
    q.query('SELECT org_id, name, state, type FROM catalog_traits WHERE org_id = ANY($1)', [ids]),
  ]);
  for (const r of ev.rows) out.get(r.org_id)!.events.set(r.name, { state: r.state as GovernanceState, properties: bare(r.properties) });
  for (const r of tr.rows) out.get(r.org_id)!.traits.set(r.name, { state: r.state as GovernanceState, type: r.type });
  return out;
}

/** The org's current snapshot, or undefined for an unknown org. */
export async function loadSnapshot(q: Queryable, orgId: string): Promise<CatalogSnapshot | undefined> {
  const r = await q.query<OrgRow>(ORGS, [[orgId]]);
  return (await build(q, r.rows)).get(orgId);
}

/**
 * Snapshots per org, owned by one worker (no module state). Each `get` costs one indexed read of
 * the orgs' versions; only orgs whose version moved are reloaded. Unknown orgs are absent from the
 * answer. Entries live as long as the cache (one per org the owner has seen).
 */
export class SnapshotCache {
  private readonly byOrg = new Map<string, CatalogSnapshot>();

  async get(q: Queryable, orgIds: string[]): Promise<Map<string, CatalogSnapshot>> {
    if (orgIds.length === 0) return new Map();
    return this.at(q, (await q.query<OrgRow>(ORGS, [orgIds])).rows);
  }

  /** As `get`, from org rows (id, catalog_version, settings) the caller read itself. */
  async at(q: Queryable, rows: OrgRow[]): Promise<Map<string, CatalogSnapshot>> {
    const out = new Map<string, CatalogSnapshot>();
    const stale: OrgRow[] = [];
    for (const row of rows) {
      const cached = this.byOrg.get(row.id);
      if (cached !== undefined && cached.version === Number(row.catalog_version)) out.set(row.id, cached);
      else stale.push(row);
    }
    if (stale.length > 0) {
      for (const [id, snap] of await build(q, stale)) { this.byOrg.set(id, snap); out.set(id, snap); }
    }
    return out;
  }

  /** The org's cached snapshot, whatever its version (the caller checks the version where it writes). */
  peek(orgId: string): CatalogSnapshot | undefined {
    return this.byOrg.get(orgId);
  }

  /** Forgets an org, so the next `get` reloads it whatever its version. */
  invalidate(orgId: string): void {
    this.byOrg.delete(orgId);
  }
}
