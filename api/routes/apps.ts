import { newId } from '../../pipeline/ids.js';
import { tx } from '../../pipeline/store/postgres.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, likeSubstring, page } from '../../http/pagination.js';
import { latest, type Bind, type Deps, type RecentActivity } from './deps.js';
import { insertSource, sourceOut } from './sources.js';

const APP_COLS = `a.id, a.org_id, a.name, a.environment, a.status, a.created_at, a.updated_at, a.archived_at, a.last_received_at,
  (SELECT count(*) FROM sources s WHERE s.app_id = a.id AND s.archived_at IS NULL) AS source_count`;

export const appOut = (r: any, recent?: RecentActivity) => ({
  id: r.id, orgId: r.org_id, name: r.name, environment: r.environment, status: r.status,
  createdAt: r.created_at, updatedAt: r.updated_at, archivedAt: r.archived_at,
  sourceCount: r.source_count, lastReceivedAt: latest(r.last_received_at, recent?.app(r.id)),
});

export async function getApp(d: Deps, orgId: string, id: string) {
  const r = await d.pool.query(`SELECT ${APP_COLS} FROM apps a WHERE a.org_id = $1 AND a.id = $2`, [orgId, id]);
  if (!r.rows[0]) throw notFound('app');
  return r.rows[0];
}

export function appRoutes(bind: Bind, d: Deps) {
  bind('POST', '/v1/apps', async (req) => {
    const orgId = req.principal.orgId!;
    const { name, environment } = req.body.data;
    const id = newId('app');
    // Every app is born with its first-party `api` source.
    const source = await tx(d.pool, async (c) => {
      await c.query(`INSERT INTO apps (id, org_id, name, environment, status, created_at, updated_at)
        VALUES ($1, $2, $3, $4, 'active', now(), now())`, [id, orgId, name, environment]);
      return insertSource(c, d, orgId, id, 'api', {});
    });
    // The default source comes with the answer: its id is what ingestion calls name as sourceId.
    const sources = [{ id: source.id as string, kind: source.kind as string, name: source.kind as string }];
    return { status: 201, data: { ...appOut(await getApp(d, orgId, id), d.recent), sources } };
  });

  bind('GET', '/v1/apps', async (req) => {
    const { limit, q, status } = req.query;
    const args: unknown[] = [req.principal.orgId];
    let where = 'a.org_id = $1';
    if (q) { args.push(likeSubstring(q)); where += ` AND a.name ILIKE $${args.length}`; }
    if (status && status !== 'all') { args.push(status); where += ` AND a.status = $${args.length}`; }
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { args.push(String(after)); where += ` AND a.id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(`SELECT ${APP_COLS} FROM apps a WHERE ${where} ORDER BY a.id DESC LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.id, (x) => appOut(x, d.recent));
  });

  bind('GET', '/v1/apps/{id}', async (req) => ({ data: appOut(await getApp(d, req.principal.orgId!, req.params.id), d.recent) }));

  bind('PATCH', '/v1/apps/{id}', async (req) => {
    const orgId = req.principal.orgId!;
    const { name, status } = req.body.data;
    await getApp(d, orgId, req.params.id);
    await d.pool.query(`UPDATE apps SET
        name = COALESCE($3, name),
        status = CASE WHEN $4::text = 'archived' THEN 'archived' ELSE status END,
        archived_at = CASE WHEN $4::text = 'archived' THEN COALESCE(archived_at, now()) ELSE archived_at END,
        updated_at = now()
      WHERE org_id = $1 AND id = $2`, [orgId, req.params.id, name ?? null, status ?? null]);
    return { data: appOut(await getApp(d, orgId, req.params.id), d.recent) };
  });

  bind('POST', '/v1/apps/{appId}/sources', async (req) => {
    const orgId = req.principal.orgId!;
    const app = await getApp(d, orgId, req.params.appId);
    if (app.status === 'archived') throw httpError('conflict', 'the app is archived; it takes no new sources');
    const { kind, config } = req.body.data;
    const row = await insertSource(d.pool, d, orgId, app.id, kind, config ?? {});
    return { status: 201, data: sourceOut(row, d.recent) };
  });

  bind('GET', '/v1/apps/{appId}/sources', async (req) => {
    const orgId = req.principal.orgId!;
    await getApp(d, orgId, req.params.appId);
    const limit = req.query.limit;
    const args: unknown[] = [orgId, req.params.appId];
    let where = 'org_id = $1 AND app_id = $2';
    const after = decodeCursor(req.query.cursor, isString);
    if (after !== undefined) { args.push(String(after)); where += ` AND id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query(`SELECT * FROM sources WHERE ${where} ORDER BY id DESC LIMIT $${args.length}`, args);
    return page(r.rows, limit, (x) => x.id, (x) => sourceOut(x, d.recent));
  });
}
