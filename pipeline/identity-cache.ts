// Which profile owns an identifier, as read or written by this process, per org at the org's
// identity version (identity_versions, migration 8: moved by every statement that moves or deletes
// identifiers). Only the fast path uses it (fast-track.ts), and it never trusts an entry
// blindly: the writing statement checks that the org's version is still the one the entries were
// learned at, and answers "stale" otherwise. One per process (embedded) or per worker thread.
const MAX_ENTRIES_PER_ORG = 100_000;

interface OrgEntries { version: number; owners: Map<string, string> }

export class IdentityCache {
  private readonly byOrg = new Map<string, OrgEntries>();

  /** The org's version and its owner map, or undefined when nothing is known. */
  peek(orgId: string): OrgEntries | undefined {
    return this.byOrg.get(orgId);
  }

  /**
   * Records owners read (or written) at `version`. Entries of an older version are dropped; learning
   * at an older version than the one held is ignored (what was read then may have moved since).
   */
  learn(orgId: string, version: number, entries: Iterable<[key: string, profileId: string]>): void {
    let org = this.byOrg.get(orgId);
    if (org !== undefined && version < org.version) return;
    if (org === undefined || version > org.version) this.byOrg.set(orgId, (org = { version, owners: new Map() }));
    for (const [key, profileId] of entries) {
      // Bounded: past the cap the org starts over (the slow path learns again).
      if (org.owners.size >= MAX_ENTRIES_PER_ORG) org.owners.clear();
      org.owners.set(key, profileId);
    }
  }

  /** The org's identifiers moved since: forget them, and remember the version read now. */
  reset(orgId: string, version: number): void {
    this.byOrg.set(orgId, { version, owners: new Map() });
  }

  close(): void {
    this.byOrg.clear();
  }
}

/** The key of an identifier within its org. */
export const ownerKey = (appId: string, kind: string, value: string) => `${appId}\u0000${kind}\u0000${value}`;

/**
 * Identifier owners as the cache learns them, per org: those a statement found ([org, app, kind,
 * value, profile]) and those it attached.
 */
export function ownersByOrg(
  found: Iterable<readonly [string, string, string, string, string]>,
  attached: Iterable<{ o: string; a: string; k: string; v: string; p: string }>,
): Map<string, Array<[string, string]>> {
  const byOrg = new Map<string, Array<[string, string]>>();
  const add = (o: string, owner: [string, string]) => {
    let l = byOrg.get(o);
    if (!l) byOrg.set(o, (l = []));
    l.push(owner);
  };
  for (const [o, a, k, v, p] of found) add(o, [ownerKey(a, k, v), p]);
  for (const x of attached) add(x.o, [ownerKey(x.a, x.k, x.v), x.p]);
  return byOrg;
}
