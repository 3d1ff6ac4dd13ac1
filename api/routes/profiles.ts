// Read routes over what ingestion stored: profiles from Postgres, events from ClickHouse.
import { identifiersOf, profileOut, profileResource, type ProfileRow } from '../../pipeline/identity.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, isStringPair, likeSubstring, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

import { chTime } from '../../pipeline/store/events.js';

const isoOf = (ch: string) => (ch.includes('T') ? ch : ch.replace(' ', 'T')) + (ch.endsWith('Z') ? '' : 'Z');

export function profileRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/profiles/{id}', async (req) => {
    const r = await d.pool.query<ProfileRow>('SELECT * FROM profiles WHERE org_id = $1 AND id = $2', [req.principal.orgId, req.params.id]);
    if (!r.rows[0]) throw notFound('profile');
    return { data: await profileOut(d.pool, r.rows[0]) };
  });

  const mustExist = async (orgId: string, id: string) => {
    const r = await d.pool.query('SELECT 1 FROM profiles WHERE org_id = $1 AND id = $2', [orgId, id]);
    if (!r.rows[0]) throw notFound('profile');
  };

  bind('GET', '/v1/profiles/{id}/merged', async (req) => {
    const orgId = req.principal.orgId!;
    await mustExist(orgId, req.params.id);
    const r = await d.pool.query<ProfileRow>('SELECT * FROM profiles WHERE org_id = $1 AND merged_into = $2 ORDER BY id DESC LIMIT 100', [orgId, req.params.id]);
    const data = [];
    for (const row of r.rows) data.push(await profileOut(d.pool, row));
    return { data, meta: { hasMore: false, nextCursor: null } };
  });

  bind('GET', '/v1/profiles/{id}/segments', async (req) => {
    const orgId = req.principal.orgId!;
    await mustExist(orgId, req.params.id);
    const r = await d.pool.query<{ segment_id: string; entered_at: Date }>(
      'SELECT segment_id, entered_at FROM segment_members WHERE org_id = $1 AND profile_id = $2 ORDER BY segment_id LIMIT 1000', [orgId, req.params.id]);
    const data = r.rows.map((m) => ({ segmentId: m.segment_id, orgId, profileId: req.params.id, enteredAt: m.entered_at }));
    return { data, meta: { hasMore: false, nextCursor: null } };
  });

  // With kind and value: the live profile holding that identifier (identifiers follow the survivor
  // of a merge). Without them: the org's live profiles, newest first, optionally searched by `q`.
  bind('GET', '/v1/profiles', async (req) => {
    const { kind, value, q, limit, cursor } = req.query;
    if ((kind === undefined) !== (value === undefined)) {
      throw httpError('validation_failed', `query: kind and value go together (got only ${kind === undefined ? 'value' : 'kind'})`);
    }
    if (kind !== undefined) {
      const r = await d.pool.query<ProfileRow>(
        `SELECT p.* FROM identifiers i JOIN profiles p ON p.id = i.profile_id
         WHERE i.org_id = $1 AND i.kind = $2 AND i.value = $3 AND p.merged_into IS NULL ORDER BY p.id DESC LIMIT 100`,
        [req.principal.orgId, kind, value]);
      const data = [];
      for (const row of r.rows) data.push(await profileOut(d.pool, row));
      return { data, meta: { hasMore: false, nextCursor: null } };
    }
    const args: unknown[] = [req.principal.orgId];
    let where = 'p.org_id = $1 AND p.merged_into IS NULL';
    if (q) {
      // A substring of an identifier value or of a string trait, case-insensitive. Pages walk
      // profiles_org_live (org_id, id) WHERE merged_into IS NULL backwards, newest first.
      args.push(likeSubstring(q));
      const n = args.length;
      where += ` AND (EXISTS (SELECT 1 FROM identifiers i WHERE i.org_id = p.org_id AND i.profile_id = p.id AND i.value ILIKE $${n})
        OR EXISTS (SELECT 1 FROM jsonb_each(p.traits) t WHERE jsonb_typeof(t.value) = 'string' AND t.value #>> '{}' ILIKE $${n}))`;
    }
    const after = decodeCursor(cursor, isString);
    if (after !== undefined) { args.push(after); where += ` AND p.id < $${args.length}`; }
    args.push(limit + 1);
    const r = await d.pool.query<ProfileRow>(`SELECT p.* FROM profiles p WHERE ${where} ORDER BY p.id DESC LIMIT $${args.length}`, args);
    const ids = await identifiersOf(d.pool, r.rows.slice(0, limit).map((x) => x.id));
    return page(r.rows, limit, (x) => x.id, (x) => profileResource(x, ids.get(x.id) ?? []));
  });

  // Newest first by (timestamp, id). A profile's history includes the profiles merged into it.
  bind('GET', '/v1/events', async (req) => {
    const q = req.query;
    const params: Record<string, unknown> = { org: req.principal.orgId, lim: q.limit + 1 };
    const where = ['org_id = {org:String}'];
    if (q.profileId) {
      const r = await d.pool.query<{ id: string }>(
        'SELECT id FROM profiles WHERE org_id = $1 AND (id = $2 OR merged_into = $2)', [req.principal.orgId, q.profileId]);
      params.pids = r.rows.map((x) => x.id);
      where.push('profile_id IN {pids:Array(String)}');
    }
    if (q.event) { params.event = q.event; where.push('event = {event:String}'); }
    if (q.appId) { params.app = q.appId; where.push('app_id = {app:String}'); }
    if (q.since) { params.since = chTime(new Date(q.since).toISOString()); where.push(`timestamp >= toDateTime64({since:String}, 3, 'UTC')`); }
    if (q.until) { params.until = chTime(new Date(q.until).toISOString()); where.push(`timestamp < toDateTime64({until:String}, 3, 'UTC')`); }
    const after = decodeCursor(q.cursor, isStringPair);
    if (after) {
      params.cts = after[0]; params.cid = after[1];
      where.push(`(timestamp, id) < (toDateTime64({cts:String}, 3, 'UTC'), {cid:String})`);
    }
    // FINAL collapses re-emitted duplicates (same event id) that a redelivery may have inserted.
    const rs = await d.ch.query({
      query: `SELECT id, org_id, app_id, source_id, profile_id, environment, event, properties,
                toString(timestamp) AS ts, toString(received_at) AS rts, message_id, context
              FROM events FINAL WHERE ${where.join(' AND ')} ORDER BY timestamp DESC, id DESC LIMIT {lim:UInt32}`,
      query_params: params, format: 'JSONEachRow',
    });
    const rows = (await rs.json()) as any[];
    return page(rows, q.limit, (r) => [r.ts, r.id], (r) => {
      const e: Record<string, unknown> = {
        id: r.id, orgId: r.org_id, appId: r.app_id, sourceId: r.source_id, profileId: r.profile_id,
        environment: r.environment, event: r.event, properties: JSON.parse(r.properties),
        timestamp: isoOf(r.ts), receivedAt: isoOf(r.rts), messageId: r.message_id,
      };
      if (r.context) e.context = JSON.parse(r.context);
      return e;
    });
  });
}

