// Catalog (OpenAPI tag "catalog"; description, "Ingestion"): the tracking plan of event and trait names,
// and the strict policy's quarantine. Every mutation bumps orgs.catalog_version in its own
// transaction, so ingestion workers reload their snapshot.
import type pg from 'pg';
import { tx } from '../../pipeline/store/postgres.js';
import { bumpCatalogVersion, deny, promote, replayWaves, requeue } from '../../pipeline/governance/mod.js';
import type { CallResult, IngestCall } from '../../pipeline/types.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, isStringPair, likeSubstring, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

const eventOut = (r: any) => ({
  orgId: r.org_id, name: r.name, properties: r.properties, state: r.state, createdAt: r.created_at, updatedAt: r.updated_at,
});
const traitOut = (r: any) => ({
  orgId: r.org_id, name: r.name, type: r.type, state: r.state, createdAt: r.created_at, updatedAt: r.updated_at,
});

interface Kind { path: '/v1/catalog/events' | '/v1/catalog/traits'; table: string; what: string; out: (r: any) => unknown }
const KINDS: Kind[] = [
  { path: '/v1/catalog/events', table: 'catalog_events', what: 'catalog event', out: eventOut },
  { path: '/v1/catalog/traits', table: 'catalog_traits', what: 'catalog trait', out: traitOut },
];

/** Runs one catalog write with the version bump; `write` answers the changed row (none: 404). */
async function mutate(d: Deps, orgId: string, k: Kind, write: (c: pg.PoolClient) => Promise<pg.QueryResult>) {
  const row = await tx(d.pool, async (c) => {
    const r = (await write(c)).rows[0];
    if (r) await bumpCatalogVersion(c, orgId);
    return r;
  });
  if (!row) throw notFound(k.what);
  return row;
}

/** Transient failures (rate, quota, outages) go back to the queue; the others are final. */
const transient = (r: CallResult) => r.status === 429 || r.status >= 500;

export function catalogRoutes(bind: Bind, d: Deps) {
  for (const k of KINDS) {
    bind('GET', k.path, async (req) => {
      const { limit, q, state } = req.query;
      const args: unknown[] = [req.principal.orgId];
      let where = 'org_id = $1';
      // The column sorts in "C"; matching uses the database's own case rules, so `q` folds
      // non-ASCII letters too.
      if (q) { args.push(likeSubstring(q)); where += ` AND name COLLATE "default" ILIKE $${args.length}`; }
      if (state) { args.push(state); where += ` AND state = $${args.length}`; }
      const after = decodeCursor(req.query.cursor, isString);
      if (after !== undefined) { args.push(String(after)); where += ` AND name > $${args.length}`; }
      args.push(limit + 1);
      const r = await d.pool.query(`SELECT * FROM ${k.table} WHERE ${where} ORDER BY name LIMIT $${args.length}`, args);
      return page(r.rows, limit, (x) => x.name, k.out);
    });

    bind('GET', `${k.path}/{name}` as const, async (req) => {
      const r = await d.pool.query(`SELECT * FROM ${k.table} WHERE org_id = $1 AND name = $2`, [req.principal.orgId, req.params.name]);
      if (!r.rows[0]) throw notFound(k.what);
      return { data: k.out(r.rows[0]) };
    });

    bind('POST', `${k.path}/{name}/state` as const, async (req) => {
      const orgId = req.principal.orgId!;
      const row = await mutate(d, orgId, k, (c) => c.query(
        `UPDATE ${k.table} SET state = $3, updated_at = now() WHERE org_id = $1 AND name = $2 RETURNING *`,
        [orgId, req.params.name, req.body.data.state]));
      return { data: k.out(row) };
    });
  }

  /** `value`: the kind's own column (an event's properties, a trait's type). */
  const create = async (k: Kind, cols: string, orgId: string, name: string, value: unknown) => {
    const r = await tx(d.pool, async (c) => {
      const ins = await c.query(
        `INSERT INTO ${k.table} (org_id, name, ${cols}, state) VALUES ($1, $2, $3, 'allowed')
         ON CONFLICT (org_id, name) DO NOTHING RETURNING *`, [orgId, name, value]);
      if (ins.rows[0]) await bumpCatalogVersion(c, orgId);
      return ins.rows[0];
    });
    if (!r) throw httpError('conflict', `a ${k.what} named "${name}" is already registered`);
    return { status: 201, data: k.out(r) };
  };
  bind('POST', '/v1/catalog/events', async (req) =>
    create(KINDS[0]!, 'properties', req.principal.orgId!, req.body.data.name, JSON.stringify(req.body.data.properties ?? {})));
  bind('POST', '/v1/catalog/traits', async (req) => create(KINDS[1]!, 'type', req.principal.orgId!, req.body.data.name, req.body.data.type));

  // PATCH replaces the event's whole property map / the trait's type.
  bind('PATCH', '/v1/catalog/events/{name}', async (req) => {
    const orgId = req.principal.orgId!;
    const row = await mutate(d, orgId, KINDS[0]!, (c) => c.query(
      'UPDATE catalog_events SET properties = $3::jsonb, updated_at = now() WHERE org_id = $1 AND name = $2 RETURNING *',
      [orgId, req.params.name, JSON.stringify(req.body.data.properties)]));
    return { data: eventOut(row) };
  });
  bind('PATCH', '/v1/catalog/traits/{name}', async (req) => {
    const orgId = req.principal.orgId!;
    const row = await mutate(d, orgId, KINDS[1]!, (c) => c.query(
      'UPDATE catalog_traits SET type = $3, updated_at = now() WHERE org_id = $1 AND name = $2 RETURNING *',
      [orgId, req.params.name, req.body.data.type]));
    return { data: traitOut(row) };
  });

  // The queue grouped by name (the index quarantine_name serves the grouping and the cursor).
  bind('GET', '/v1/catalog/quarantine', async (req) => {
    const { limit } = req.query;
    const args: unknown[] = [req.principal.orgId];
    let where = 'org_id = $1';
    const after = decodeCursor(req.query.cursor, isStringPair);
    if (after !== undefined) { args.push(after[0], after[1]); where += ' AND (kind, name COLLATE "C") > ($2, $3 COLLATE "C")'; }
    args.push(limit + 1);
    const r = await d.pool.query(
      `SELECT kind, name, count(*)::int AS held, min(created_at) AS first_at, max(created_at) AS last_at FROM quarantine
       WHERE ${where} GROUP BY kind, name ORDER BY kind, name COLLATE "C" LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => [x.kind, x.name], (x) => ({ kind: x.kind, name: x.name, held: x.held, firstHeldAt: x.first_at, lastHeldAt: x.last_at }));
  });

  bind('POST', '/v1/catalog/quarantine/promote', async (req) => {
    const ingest = d.ingest;
    if (!ingest) throw httpError('dependency_unavailable', 'the ingestion pipeline is not available; nothing was promoted');
    const orgId = req.principal.orgId!;
    const { kind, name } = req.body.data;
    const held = await promote(d.pool, orgId, kind, name);
    let applied = 0;
    const retry: IngestCall[] = [];
    const waves = replayWaves(kind, held);
    for (let w = 0; w < waves.length; w++) {
      const wave = waves[w]!.map((i) => held[i]!);
      let results: CallResult[];
      try {
        results = await ingest.replay(wave.map((c): IngestCall => ({ ...c, promoted: true })));
      } catch (err) {
        // Keep this wave and the later ones for the next promote. Part of this wave may have been
        // applied; replaying it again is harmless (messageId dedup, trait sets are idempotent).
        await requeue(d.pool, { orgId, kind, name }, [...retry, ...waves.slice(w).flat().map((i) => held[i]!)]);
        throw err;
      }
      results.forEach((r, i) => {
        if (r.status < 300) applied++;
        else if (transient(r)) retry.push(wave[i]!);
        else d.log.warn('promoted value refused on replay; dropped', { orgId, kind, name, status: r.status, error: 'error' in r ? r.error : undefined });
      });
    }
    await requeue(d.pool, { orgId, kind, name }, retry);
    return { data: { promoted: applied } };
  });

  bind('POST', '/v1/catalog/quarantine/deny', async (req) => {
    const { kind, name } = req.body.data;
    return { data: { dropped: await deny(d.pool, req.principal.orgId!, kind, name) } };
  });
}
