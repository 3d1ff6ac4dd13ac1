import type { Migration } from './types.js';

// The track fast path (pipeline/fast-track.ts) on a Postgres server, where transactions of other
// workers and front ends run beside it. headwater_track_fast gains what concurrency needs; with
// `lock` false (embedded: one session) it does what migration 8's version did.
//   - Profiles first: the lanes' profiles are locked FOR UPDATE (in id order, as every other writer
//     locks them) before anything is checked. A merge locks every profile it folds before it moves
//     identifiers or history, so a merge is either wholly committed before the checks below read the
//     identity version (and the statement answers stale), or waits for this transaction to commit
//     and then moves the history rows written here too. A locked profile found merged is stale.
//   - The orgs' shared segment locks (taken, as bulk_begin takes them, after the profiles) before the
//     segment versions are read: decisions that follow in the transaction use current definitions.
//   - messageIds are inserted in key order (two batches replaying the same ids cannot deadlock), and
//     the replays are read by a second statement: one claimed by a transaction that committed while
//     this insert waited on it is visible only to a later snapshot.
export const pg009: Migration = {
  version: 9,
  name: 'track fast path beside other transactions',
  statements: [
    //   p: { lock: bool, orgs: [{id, cv, sv, iv}], segKeys: [bigint as text], sources: [text],
    //        rows: [{o, a, m, r, p, n, t}] }
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
         ON CONFLICT DO NOTHING RETURNING org_id, app_id, message_id),
       hist AS (
         INSERT INTO event_history (profile_id, name, ts)
         SELECT x.p, x.n, x.t FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text, p text, n text, t timestamptz)
         JOIN ins ON ins.org_id = x.o AND ins.app_id = x.a AND ins.message_id = x.m)
       SELECT COALESCE(array_agg(ins.org_id || chr(1) || ins.app_id || chr(1) || ins.message_id), '{}') INTO inserted FROM ins;
       -- A new statement, so a new snapshot: messageIds another transaction committed meanwhile are seen.
       SELECT COALESCE(jsonb_agg(jsonb_build_array(m.org_id, m.app_id, m.message_id, m.result)), '[]') INTO replays
         FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text)
         JOIN messages m ON m.org_id = x.o AND m.app_id = x.a AND m.message_id = x.m
         WHERE NOT (x.o || chr(1) || x.a || chr(1) || x.m = ANY(inserted));
       RETURN jsonb_build_object('replays', replays);
     END $fn$`,
  ],
};
