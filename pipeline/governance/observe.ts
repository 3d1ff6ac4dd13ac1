// Observation: what accepted calls teach the catalog. Collecting is pure and per batch; writing
// compares with the snapshot first and does nothing at all when the catalog already agrees.
import { inferType } from './infer.js';
import { bumpCatalogVersion } from './store.js';
import type { IngestCall } from '../types.js';
import type { CatalogSnapshot, Queryable, TypeName } from './types.js';

/** Types seen in one batch of one org: the last non-null value of each name wins. */
export interface Observations {
  /** Event name -> property name -> type. An event seen without properties maps to an empty record. */
  events: Map<string, Record<string, TypeName>>;
  /** Trait name -> type. */
  traits: Map<string, TypeName>;
}

/** What was accepted: a track body (`event`, `properties`) or the applied traits of an identify. */
export type Observed =
  | { event: string; properties?: Readonly<Record<string, unknown>> }
  | { event?: undefined; traits?: Readonly<Record<string, unknown>> };

export const emptyObservations = (): Observations => ({ events: new Map(), traits: new Map() });

// Postgres text cannot hold NUL: such a name is never registered (it stays unknown).
const storable = (name: string) => name.indexOf('\u0000') === -1;

/** `consent` as an object of booleans is the profile's consent, not a trait: never observed. */
function isConsent(v: unknown): boolean {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  for (const k in v) if (typeof (v as Record<string, unknown>)[k] !== 'boolean') return false;
  return true;
}

/**
 * Adds accepted calls of one org to `into` (a fresh set when omitted): whole IngestCalls (a track's
 * event and properties, an identify's traits) or bare `Observed` values. Nulls are not observed;
 * under `strict`, held trait names of an identify are skipped later by `diffObservations`, since
 * the catalog does not hold them.
 */
export function collectObservations(accepted: Iterable<IngestCall | Observed>, into: Observations = emptyObservations()): Observations {
  for (const item of accepted) {
    const a: Observed = 'body' in item && 'kind' in item ? item.body as Observed : item as Observed;
    if (a.event !== undefined) {
      if (!storable(a.event)) continue;
      let rec = into.events.get(a.event);
      if (rec === undefined) { rec = Object.create(null) as Record<string, TypeName>; into.events.set(a.event, rec); }
      const props = a.properties;
      if (props == null) continue;
      for (const k in props) {
        if (!Object.hasOwn(props, k) || !storable(k)) continue;
        const t = inferType(props[k]);
        if (t !== null) rec[k] = t;
      }
    } else if (a.traits != null) {
      const traits = a.traits;
      for (const k in traits) {
        if (!Object.hasOwn(traits, k) || !storable(k)) continue;
        const v = traits[k];
        if (k === 'consent' && isConsent(v)) continue;
        const t = inferType(v);
        if (t !== null) into.traits.set(k, t);
      }
    }
  }
  return into;
}

/** Rows to upsert so the catalog matches `obs`, or null when the snapshot already agrees. */
export interface CatalogDiff {
  /** Sorted by name, so concurrent upserts lock rows in the same order. */
  events: Array<{ n: string; p: Record<string, TypeName> }>;
  traits: Array<{ n: string; t: TypeName }>;
}

const byName = (a: { n: string }, b: { n: string }) => (a.n < b.n ? -1 : a.n > b.n ? 1 : 0);

/**
 * Unknown names are registered only under `permissive` (under `strict` they are held, and promote
 * registers them). Allowed names get new properties and changed types recorded. Denied names are
 * never touched.
 */
export function diffObservations(snap: CatalogSnapshot, obs: Observations): CatalogDiff | null {
  let diff: CatalogDiff | null = null;
  for (const [name, seen] of obs.events) {
    const e = snap.events.get(name);
    if (e === undefined ? snap.policy !== 'permissive' : e.state !== 'allowed') continue;
    let delta: Record<string, TypeName> | undefined;
    for (const k in seen) {
      if (e !== undefined && Object.hasOwn(e.properties, k) && e.properties[k] === seen[k]) continue;
      (delta ??= Object.create(null) as Record<string, TypeName>)[k] = seen[k]!;
    }
    if (e !== undefined && delta === undefined) continue;
    (diff ??= { events: [], traits: [] }).events.push({ n: name, p: delta ?? (Object.create(null) as Record<string, TypeName>) });
  }
  for (const [name, type] of obs.traits) {
    const t = snap.traits.get(name);
    if (t === undefined ? snap.policy !== 'permissive' : t.state !== 'allowed' || t.type === type) continue;
    (diff ??= { events: [], traits: [] }).traits.push({ n: name, t: type });
  }
  if (diff !== null) { diff.events.sort(byName); diff.traits.sort(byName); }
  return diff;
}

/**
 * Writes what `obs` adds to the org's catalog: one multi-row upsert per table and one version bump,
 * or no statement at all when `snap` already agrees (the common case). Safe against concurrent
 * writers: a name registered meanwhile is merged (ON CONFLICT), a denied state is never changed,
 * and an upsert that changes nothing does not bump the version. Best called in a short
 * transaction of its own (the orgs row stays locked until commit). Answers whether it changed anything.
 */
export async function observe(client: Queryable, orgId: string, snap: CatalogSnapshot, obs: Observations): Promise<boolean> {
  const diff = diffObservations(snap, obs);
  if (diff === null) return false;
  let changed = 0;
  if (diff.events.length > 0) {
    const r = await client.query(
      `INSERT INTO catalog_events (org_id, name, properties, state, created_at, updated_at)
       SELECT $1, x->>'n', x->'p', 'allowed', now(), now() FROM jsonb_array_elements($2::jsonb) AS x
       ON CONFLICT (org_id, name) DO UPDATE
         SET properties = catalog_events.properties || EXCLUDED.properties, updated_at = now()
         WHERE catalog_events.state = 'allowed' AND NOT catalog_events.properties @> EXCLUDED.properties`,
      [orgId, JSON.stringify(diff.events)]);
    changed += r.rowCount ?? 0;
  }
  if (diff.traits.length > 0) {
    const r = await client.query(
      `INSERT INTO catalog_traits (org_id, name, type, state, created_at, updated_at)
       SELECT $1, x->>'n', x->>'t', 'allowed', now(), now() FROM jsonb_array_elements($2::jsonb) AS x
       ON CONFLICT (org_id, name) DO UPDATE SET type = EXCLUDED.type, updated_at = now()
         WHERE catalog_traits.state = 'allowed' AND catalog_traits.type <> EXCLUDED.type`,
      [orgId, JSON.stringify(diff.traits)]);
    changed += r.rowCount ?? 0;
  }
  if (changed > 0) await bumpCatalogVersion(client, orgId);
  return changed > 0;
}
