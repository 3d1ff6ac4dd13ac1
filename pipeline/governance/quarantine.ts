// The strict policy's queue: holding calls, and promote / deny of a held name.
import type pg from 'pg';
import { tx } from '../store/postgres.js';
import type { IdentifyBody, IngestCall, TrackBody } from '../types.js';
import { inferType } from './infer.js';
import { bumpCatalogVersion, lockCatalogExclusive, lockCatalogShared } from './store.js';
import type { CatalogKind, Queryable, TypeName } from './types.js';

/** One held value. For a trait, `call` should carry only that trait (and no messageId), so a
 * promote replays exactly the held value. */
export interface HoldItem { orgId: string; kind: CatalogKind; name: string; call: IngestCall }

const INSERT_HELD = `INSERT INTO quarantine (org_id, kind, name, call)
  SELECT x->>'o', x->>'k', x->>'n', x->'c' FROM json_array_elements($1::json) WITH ORDINALITY AS t(x, i) ORDER BY i`;

/**
 * Queues held calls with one multi-row insert, in the given order (their arrival order). Must run
 * inside the caller's transaction: it takes the orgs' shared catalog lock, so a concurrent promote
 * or deny either drains these rows or has already classified the name. Items whose name is in the
 * catalog by now (the caller's snapshot was stale) are not held: their indexes are returned, and
 * the caller re-judges those calls with a fresh snapshot. Usually returns [].
 */
export async function holdCalls(client: Queryable, items: HoldItem[]): Promise<number[]> {
  if (items.length === 0) return [];
  await lockCatalogShared(client, items.map((i) => i.orgId));
  const payload = JSON.stringify(items.map((i) => ({ o: i.orgId, k: i.kind, n: i.name })));
  const known = await client.query<{ i: number }>(
    `SELECT (t.i - 1)::int AS i FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(x, i)
     WHERE CASE x->>'k'
       WHEN 'event' THEN EXISTS (SELECT 1 FROM catalog_events c WHERE c.org_id = x->>'o' AND c.name = x->>'n')
       ELSE EXISTS (SELECT 1 FROM catalog_traits c WHERE c.org_id = x->>'o' AND c.name = x->>'n') END
     ORDER BY t.i`, [payload]);
  const refused = known.rows.map((r) => Number(r.i));
  const skip = new Set(refused);
  const rows = items.filter((_, i) => !skip.has(i));
  if (rows.length > 0) await insertHeld(client, rows);
  return refused;
}

async function insertHeld(client: Queryable, items: HoldItem[]): Promise<void> {
  await client.query(INSERT_HELD, [JSON.stringify(items.map((i) => ({ o: i.orgId, k: i.kind, n: i.name, c: i.call })))]);
}

/**
 * Puts calls taken by `promote` back in the queue (the replay failed), whatever the catalog says
 * now; a later promote of the name applies them.
 */
export async function requeue(client: Queryable, entry: { orgId: string; kind: CatalogKind; name: string }, calls: IngestCall[]): Promise<void> {
  const { orgId, kind, name } = entry;
  if (calls.length > 0) await insertHeld(client, calls.map((call) => ({ orgId, kind, name, call })));
}

/** Arrival order: the front end's receipt time, then queue order. */
async function takeHeld(c: pg.PoolClient, orgId: string, kind: CatalogKind, name: string): Promise<IngestCall[]> {
  const r = await c.query<{ id: string | number; call: IngestCall }>(
    'DELETE FROM quarantine WHERE org_id = $1 AND kind = $2 AND name = $3 RETURNING id, call', [orgId, kind, name]);
  const rows = r.rows.map((x) => ({ id: Number(x.id), call: x.call }));
  rows.sort((a, b) => (a.call.receivedAt - b.call.receivedAt) || (a.id - b.id));
  return rows.map((x) => x.call);
}

/** Property types seen across held track calls (the last non-null value wins). */
function eventTypes(calls: IngestCall[]): Record<string, TypeName> {
  const out = Object.create(null) as Record<string, TypeName>;
  for (const c of calls) {
    const props = (c.body as TrackBody).properties;
    if (props == null) continue;
    for (const k in props) {
      const t = inferType(props[k]);
      if (t !== null) out[k] = t;
    }
  }
  return out;
}

/** Type of the last non-null held value of a trait; `string` when none says otherwise. */
function traitType(calls: IngestCall[], name: string): TypeName {
  for (let i = calls.length - 1; i >= 0; i--) {
    const t = inferType((calls[i]!.body as IdentifyBody).traits?.[name]);
    if (t !== null) return t;
  }
  return 'string';
}

/** Sets the entry's state, creating it when missing (types inferred from the held calls). */
async function classify(c: pg.PoolClient, entry: { orgId: string; kind: CatalogKind; name: string }, state: 'allowed' | 'denied', held: IngestCall[]) {
  const { orgId, kind, name } = entry;
  if (kind === 'event') {
    // Known property types are kept; held calls only add the ones the entry lacks.
    await c.query(
      `INSERT INTO catalog_events (org_id, name, properties, state) VALUES ($1, $2, $3::jsonb, $4)
       ON CONFLICT (org_id, name) DO UPDATE
         SET state = EXCLUDED.state, properties = EXCLUDED.properties || catalog_events.properties, updated_at = now()`,
      [orgId, name, JSON.stringify(eventTypes(held)), state]);
  } else {
    await c.query(
      `INSERT INTO catalog_traits (org_id, name, type, state) VALUES ($1, $2, $3, $4)
       ON CONFLICT (org_id, name) DO UPDATE SET state = EXCLUDED.state, updated_at = now()`,
      [orgId, name, traitType(held, name), state]);
  }
  await bumpCatalogVersion(c, orgId);
}

/**
 * Allows the name (creating the entry if missing) and takes its held calls out of the queue, in
 * arrival order, in one transaction. The caller replays them (marked `promoted`) after the commit,
 * and requeues what it could not apply. Promoting an already-allowed name still drains its queue.
 * A denied name stays denied (denied always wins; the state route lifts a deny): nothing changes
 * and [] is returned.
 */
export function promote(pool: pg.Pool, orgId: string, kind: CatalogKind, name: string): Promise<IngestCall[]> {
  return tx(pool, async (c) => {
    await lockCatalogExclusive(c, orgId);
    const table = kind === 'event' ? 'catalog_events' : 'catalog_traits';
    const cur = await c.query(`SELECT state FROM ${table} WHERE org_id = $1 AND name = $2 FOR UPDATE`, [orgId, name]);
    if (cur.rows[0]?.state === 'denied') return [];
    const held = await takeHeld(c, orgId, kind, name);
    await classify(c, { orgId, kind, name }, 'allowed', held);
    return held;
  });
}

/** Denies the name (creating the entry if missing) and drops its held calls; answers how many. */
export function deny(pool: pg.Pool, orgId: string, kind: CatalogKind, name: string): Promise<number> {
  return tx(pool, async (c) => {
    await lockCatalogExclusive(c, orgId);
    const held = await takeHeld(c, orgId, kind, name);
    await classify(c, { orgId, kind, name }, 'denied', held);
    return held.length;
  });
}
