import type { Migration } from './types.js';

// headwater_track_fast (migrations 8 and 9), same checks and locks, writing less per call:
//   - The segment history of the new events comes from the messages the insert returned (their
//     stored answer holds the event) instead of joining the rows back to the insert: with hash and
//     merge joins off, that join compared every row with every inserted row (57 x 57 for a batch
//     of 57: 2 of the statement's 6 ms on PGlite).
//   - When every row was inserted there is nothing to replay (a batch's messageIds are distinct),
//     so the replay read is skipped.
//   - Rows carry no event name and time of their own (read from the event).
export const pg011: Migration = {
  version: 11,
  name: 'track fast path: history from the inserted messages',
  statements: [
    //   p: { lock: bool, orgs: [{id, cv, sv, iv}], segKeys: [bigint as text], sources: [text],
    //        rows: [{o, a, m, r: {event}, p}] }
    //   -> { stale: true, iv: [[org, version]] } (nothing written) | { replays: [[o, a, m, result]] }
    `CREATE OR REPLACE FUNCTION headwater_track_fast(p jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE
     SET enable_hashjoin = off SET enable_mergejoin = off AS $fn$
     DECLARE
       current boolean := true;
       wanted int;
       locked int;
       replays jsonb;
       inserted text[];
     BEGIN
       IF (p->>'lock')::boolean THEN
         SELECT count(DISTINCT x.p) INTO wanted FROM jsonb_to_recordset(p->'rows') AS x(p text);
         SELECT count(*), COALESCE(bool_and(pr.merged_into IS NULL), false) INTO locked, current
           FROM (SELECT id, merged_into FROM profiles
                 WHERE id IN (SELECT x.p FROM jsonb_to_recordset(p->'rows') AS x(p text)) ORDER BY id FOR UPDATE) pr;
         current := current AND locked = wanted;
         PERFORM pg_advisory_xact_lock_shared(k)
           FROM (SELECT e::bigint AS k FROM jsonb_array_elements_text(p->'segKeys') AS e) s ORDER BY k;
       END IF;
       IF current THEN
         SELECT COALESCE(bool_and(o.id IS NOT NULL AND o.catalog_version = x.cv AND o.segments_version = x.sv
                                  AND COALESCE(v.version, 0) = x.iv), false)
           INTO current
           FROM jsonb_to_recordset(p->'orgs') AS x(id text, cv bigint, sv bigint, iv bigint)
           LEFT JOIN orgs o ON o.id = x.id LEFT JOIN identity_versions v ON v.org_id = x.id;
       END IF;
       IF current AND EXISTS (
         SELECT 1 FROM jsonb_array_elements_text(p->'sources') AS s(id)
         LEFT JOIN sources so ON so.id = s.id LEFT JOIN apps a ON a.id = so.app_id
         WHERE so.id IS NULL OR so.archived_at IS NOT NULL OR a.id IS NULL OR a.status = 'archived') THEN
         current := false;
       END IF;
       IF NOT current THEN
         RETURN jsonb_build_object('stale', true, 'iv', (
           SELECT COALESCE(jsonb_agg(jsonb_build_array(x.id, COALESCE(v.version, 0))), '[]')
           FROM jsonb_to_recordset(p->'orgs') AS x(id text) LEFT JOIN identity_versions v ON v.org_id = x.id));
       END IF;
       WITH ins AS (
         INSERT INTO messages (org_id, app_id, message_id, kind, result)
         SELECT x.o, x.a, x.m, 'track', x.r FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text, r jsonb)
         ORDER BY x.o, x.a, x.m
         ON CONFLICT DO NOTHING RETURNING org_id, app_id, message_id, result->'event' AS e),
       hist AS (
         INSERT INTO event_history (profile_id, name, ts)
         SELECT ins.e->>'profileId', ins.e->>'event', (ins.e->>'timestamp')::timestamptz FROM ins)
       SELECT COALESCE(array_agg(ins.org_id || chr(1) || ins.app_id || chr(1) || ins.message_id), '{}') INTO inserted FROM ins;
       IF cardinality(inserted) = jsonb_array_length(p->'rows') THEN
         RETURN jsonb_build_object('replays', '[]'::jsonb);
       END IF;
       -- A new statement, so a new snapshot: messageIds another transaction committed meanwhile are seen.
       SELECT COALESCE(jsonb_agg(jsonb_build_array(m.org_id, m.app_id, m.message_id, m.result)), '[]') INTO replays
         FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text)
         JOIN messages m ON m.org_id = x.o AND m.app_id = x.a AND m.message_id = x.m
         WHERE NOT (x.o || chr(1) || x.a || chr(1) || x.m = ANY(inserted));
       RETURN jsonb_build_object('replays', replays);
     END $fn$`,
  ],
};
