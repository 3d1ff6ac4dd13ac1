// Segments (OpenAPI tag "segments"). Create and update decide membership over every
// existing profile before answering (memberCount is exact); delete drops memberships without exit
// events. Every mutation bumps orgs.segments_version under the org's exclusive segment lock, which
// waits for ingestion transactions deciding with the old definitions (pipeline/segments/cache.ts),
// and fills the history of event names no segment named before (pipeline/segments/history.ts).
import type pg from 'pg';
import { newId } from '../../pipeline/ids.js';
import { tx } from '../../pipeline/store/postgres.js';
import { checkQuota, lockQuota } from '../../pipeline/quotas.js';
import { backfill, fillHistory, LEASE, normalizeDefinition, preview, segmentLockKey, watchedNames, type Definition, type JobDeps } from '../../pipeline/segments/mod.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, likeSubstring, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

const segmentOut = (r: any, memberCount?: number) => ({
  id: r.id, orgId: r.org_id, name: r.name, description: r.description, definition: r.definition,
  environments: r.environments, createdAt: r.created_at, updatedAt: r.updated_at,
  ...(memberCount === undefined ? {} : { memberCount }),
});

const memberOut = (r: any) => ({ segmentId: r.segment_id, orgId: r.org_id, profileId: r.profile_id, enteredAt: r.entered_at });

/** Defaults applied and the checks the schema cannot make; unknown apps are 404 like any foreign id. */
async function definitionOf(d: Deps, orgId: string, input: unknown, at: string): Promise<Definition> {
  const n = normalizeDefinition(input, at);
  if ('error' in n) throw httpError('validation_failed', n.error);
  const apps = n.ok.appId === null ? [] : Array.isArray(n.ok.appId) ? n.ok.appId : [n.ok.appId];
  if (apps.length) {
    const r = await d.pool.query<{ id: string }>('SELECT id FROM apps WHERE org_id = $1 AND id = ANY($2)', [orgId, apps]);
    const known = new Set(r.rows.map((x) => x.id));
    const missing = apps.find((a) => !known.has(a));
    if (missing !== undefined) throw notFound(`app ${missing}`);
  }
  return n.ok;
}

/**
 * The org's segment lock, exclusively, first in a mutation's transaction (ingestion holds it shared
 * while it writes and decides); returns the event names the org's segments name before the change.
 */
async function lockSegments(c: pg.PoolClient, orgId: string): Promise<Set<string>> {
  await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [segmentLockKey(orgId)]);
  return watchedNames(c, orgId);
}

/**
 * Version bump; the history of event names no segment of the org named before is filled from the
 * stored events (ingestion writes history only for named names), still under the lock.
 */
async function bump(c: pg.PoolClient, orgId: string, before: Set<string>) {
  await c.query('UPDATE orgs SET segments_version = segments_version + 1 WHERE id = $1', [orgId]);
  const added = [...await watchedNames(c, orgId)].filter((n) => !before.has(n));
  if (added.length) await fillHistory(c, orgId, added);
}

const count = async (d: Deps, id: string) =>
  Number((await d.pool.query('SELECT count(*) AS n FROM segment_members WHERE segment_id = $1', [id])).rows[0].n);

export function segmentRoutes(bind: Bind, d: Deps, jobs: JobDeps, previewCap: number) {
  const getRow = async (orgId: string, id: string) => {
    const r = await d.pool.query('SELECT * FROM segments WHERE org_id = $1 AND id = $2', [orgId, id]);
    if (!r.rows[0]) throw notFound('segment');
    return r.rows[0];
  };

  bind('POST', '/v1/segments', async (req) => {
    const orgId = req.principal.orgId!;
    const body = req.body.data;
    const definition = await definitionOf(d, orgId, body.definition, 'body /data/definition');
    const id = newId('seg');
    // The lease keeps sweepers off while this request backfills; if it dies, a sweeper resumes.
    await tx(d.pool, async (c) => {
      const before = await lockSegments(c, orgId);
      // Under the org's segments lock: two creates at the limit cannot both pass.
      const limit = await lockQuota(c, orgId, 'segments');
      if (limit !== null) checkQuota('segments', limit, Number((await c.query('SELECT count(*) AS n FROM segments WHERE org_id = $1', [orgId])).rows[0].n), 1);
      await c.query(
        `INSERT INTO segments (id, org_id, name, description, definition, environments, version, computed_at, swept_at, lease_until, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, 1, NULL, now(), now() + ${LEASE}, now(), now())`,
        [id, orgId, body.name, body.description ?? null, JSON.stringify(definition), body.environments ?? ['development', 'production']]);
      await bump(c, orgId, before);
    });
    await backfill(jobs, id, 1);
    return { status: 201, data: segmentOut(await getRow(orgId, id), await count(d, id)) };
  });

  bind('POST', '/v1/segments/preview', async (req) => {
    const orgId = req.principal.orgId!;
    const definition = await definitionOf(d, orgId, req.body.data, 'body /data');
    return { data: await preview(d.pool, orgId, definition, previewCap) };
  });

  bind('GET', '/v1/segments', async (req) => {
    const { limit, q } = req.query;
    const args: unknown[] = [req.principal.orgId];
    let where = 'org_id = $1';
    if (q) { args.push(likeSubstring(q)); where += ` AND name ILIKE $${args.length}`; }
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { args.push(after); where += ` AND id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(`SELECT * FROM segments WHERE ${where} ORDER BY id DESC LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.id, (x) => segmentOut(x));
  });

  bind('GET', '/v1/segments/{id}', async (req) => {
    const row = await getRow(req.principal.orgId!, req.params.id);
    return { data: segmentOut(row, await count(d, row.id)) };
  });

  bind('PATCH', '/v1/segments/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    const id = req.params.id;
    const body = req.body.data;
    const definition = body.definition === undefined ? undefined : await definitionOf(d, orgId, body.definition, 'body /data/definition');
    const redecide = definition !== undefined || body.environments !== undefined;
    const version = await tx(d.pool, async (c) => {
      const before = redecide ? await lockSegments(c, orgId) : undefined;
      const r = await c.query('SELECT * FROM segments WHERE org_id = $1 AND id = $2 FOR UPDATE', [orgId, id]);
      const row = r.rows[0];
      if (!row) throw notFound('segment');
      const v = redecide ? row.version + 1 : row.version;
      await c.query(
        `UPDATE segments SET name = COALESCE($2, name),
           description = CASE WHEN $3::boolean THEN $4 ELSE description END,
           definition = COALESCE($5::jsonb, definition), environments = COALESCE($6, environments),
           version = $7, updated_at = now(),
           computed_at = CASE WHEN $8::boolean THEN NULL ELSE computed_at END,
           swept_at = CASE WHEN $8::boolean THEN now() ELSE swept_at END,
           lease_until = CASE WHEN $8::boolean THEN now() + ${LEASE} ELSE lease_until END
         WHERE id = $1`,
        [id, body.name ?? null, 'description' in body, body.description ?? null,
          definition === undefined ? null : JSON.stringify(definition), body.environments ?? null, v, redecide]);
      if (before) await bump(c, orgId, before);
      return redecide ? v : undefined;
    });
    // A later update supersedes this backfill; its own request then answers the final count.
    if (version !== undefined) await backfill(jobs, id, version);
    return { data: segmentOut(await getRow(orgId, id), await count(d, id)) };
  });

  bind('DELETE', '/v1/segments/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    const gone = await tx(d.pool, async (c) => {
      const before = await lockSegments(c, orgId);
      const r = await c.query('DELETE FROM segments WHERE org_id = $1 AND id = $2 RETURNING id', [orgId, req.params.id]);
      if (!r.rows[0]) return false;
      await c.query('DELETE FROM segment_members WHERE segment_id = $1', [req.params.id]);
      await bump(c, orgId, before);
      return true;
    });
    if (!gone) throw notFound('segment');
    return { data: { deleted: true } };
  });

  bind('GET', '/v1/segments/{id}/members', async (req) => {
    const orgId = req.principal.orgId!;
    const seg = await getRow(orgId, req.params.id);
    const { limit } = req.query;
    const args: unknown[] = [seg.id];
    let where = 'segment_id = $1';
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { args.push(after); where += ` AND profile_id > $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(`SELECT * FROM segment_members WHERE ${where} ORDER BY profile_id LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.profile_id, memberOut);
  });
}
