import type { Migration } from './types.js';

// The embedded fast path of track calls (pipeline/fast-track.ts): one statement per batch when the
// process already knows every call's profile.
//   - identity_versions: a counter per org, moved by every statement that moves or deletes
//     identifiers (merges, deletions; whatever code runs them, through the triggers below). An
//     identifier -> profile mapping read at version v still holds while the version is v, since
//     inserts never change the owner of an identifier that exists.
//   - headwater_track_fast: checks, in the writing statement, that everything the caller decided
//     with is still current (catalog, segment and identity versions of the orgs; sources and apps
//     not archived), then stores the messageIds with their answers and the segment history of the
//     new ones. A messageId stored before is a replay: its stored answer comes back instead.
// As written here it is for embedded Postgres only, where no other transaction can run beside the
// statement, so a check and the writes after it see the same state; migration 9 replaces the
// function with one that also locks what it checks, for a Postgres server.
export const pg008: Migration = {
  version: 8,
  name: 'track fast path',
  statements: [
    `CREATE TABLE identity_versions (org_id text PRIMARY KEY, version bigint NOT NULL)`,
    `CREATE FUNCTION headwater_identity_moved() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       INSERT INTO identity_versions (org_id, version) SELECT DISTINCT org_id, 1 FROM old_rows
         ON CONFLICT (org_id) DO UPDATE SET version = identity_versions.version + 1;
       RETURN NULL;
     END $fn$`,
    // Transition tables allow one event per trigger: one for UPDATE, one for DELETE.
    `CREATE TRIGGER identifiers_moved AFTER UPDATE ON identifiers REFERENCING OLD TABLE AS old_rows
     FOR EACH STATEMENT EXECUTE FUNCTION headwater_identity_moved()`,
    `CREATE TRIGGER identifiers_deleted AFTER DELETE ON identifiers REFERENCING OLD TABLE AS old_rows
     FOR EACH STATEMENT EXECUTE FUNCTION headwater_identity_moved()`,
    //   p: { orgs: [{id, cv, sv, iv}], sources: [text], rows: [{o, a, m, r, p, n, t}] }
    //   -> { stale: true, iv: [[org, version]] } (nothing written) | { replays: [[o, a, m, result]] }
    `CREATE FUNCTION headwater_track_fast(p jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE
     SET enable_hashjoin = off SET enable_mergejoin = off AS $fn$
     DECLARE
       current boolean;
       replays jsonb;
     BEGIN
       SELECT COALESCE(bool_and(o.id IS NOT NULL AND o.catalog_version = x.cv AND o.segments_version = x.sv
                                AND COALESCE(v.version, 0) = x.iv), false)
         INTO current
         FROM jsonb_to_recordset(p->'orgs') AS x(id text, cv bigint, sv bigint, iv bigint)
         LEFT JOIN orgs o ON o.id = x.id LEFT JOIN identity_versions v ON v.org_id = x.id;
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
       -- The statement's snapshot predates its inserts: the messages it reads are the prior ones.
       WITH ins AS (
         INSERT INTO messages (org_id, app_id, message_id, kind, result)
         SELECT x.o, x.a, x.m, 'track', x.r FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text, r jsonb)
         ON CONFLICT DO NOTHING RETURNING org_id, app_id, message_id),
       hist AS (
         INSERT INTO event_history (profile_id, name, ts)
         SELECT x.p, x.n, x.t FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text, p text, n text, t timestamptz)
         JOIN ins ON ins.org_id = x.o AND ins.app_id = x.a AND ins.message_id = x.m)
       SELECT COALESCE(jsonb_agg(jsonb_build_array(m.org_id, m.app_id, m.message_id, m.result)), '[]') INTO replays
         FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text)
         JOIN messages m ON m.org_id = x.o AND m.app_id = x.a AND m.message_id = x.m;
       RETURN jsonb_build_object('replays', replays);
     END $fn$`,
    // What headwater_bulk_begin's caller learns identities at (embedded: in the same transaction).
    `CREATE FUNCTION headwater_identity_versions(org_ids text[]) RETURNS jsonb LANGUAGE sql STABLE AS $fn$
       SELECT COALESCE(jsonb_agg(jsonb_build_array(o, COALESCE(v.version, 0))), '[]')
       FROM unnest(org_ids) AS o LEFT JOIN identity_versions v ON v.org_id = o $fn$`,
  ],
};
