import type { Migration } from './types.js';
import { pg034 } from './pg-034-no-stored-probe-for-new-profiles.js';

// headwater_track_fast inserts the identifiers of the profiles it creates with a plain INSERT
// beside other transactions (a Postgres server), where it used ON CONFLICT DO NOTHING and compared
// the row count. The identifiers are under their advisory locks, so a conflict is a rare race with
// a writer that does not take them; it still fails the statement as a concurrency failure (40001,
// the same message), now from a unique violation caught around the insert. ON CONFLICT's
// speculative insertion cost twice a plain insert: 320-row inserts into a copy of the identifiers
// table, 600 each, 3.1-3.8 s against 1.8-1.9 s with the handler's subtransaction included; under
// batch20-newusers it was 29.9 us of Postgres time per call (pg_stat_statements).
// Otherwise migration 34's function (which keeps migration 32's and 33's settings).
const LOCKED_INSERT = `INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
             SELECT x.o, x.a, x.k, x.v, x.p, x.t
             FROM jsonb_to_recordset(p->'bornIds') AS x(n int, o text, a text, k text, v text, p text, t timestamptz)
             WHERE NOT x.n = ANY(deferred)
             ON CONFLICT DO NOTHING;
           GET DIAGNOSTICS got = ROW_COUNT;
           SELECT count(*) INTO expected FROM jsonb_to_recordset(p->'bornIds') AS x(n int) WHERE NOT x.n = ANY(deferred);
           IF got <> expected THEN
             RAISE EXCEPTION 'an identifier appeared under its lock' USING ERRCODE = '40001';
           END IF;`;

function fastTrack(): string {
  const base = pg034.statements[0]!;
  if (base.split(LOCKED_INSERT).length !== 2) throw new Error('migration 36: migration 34\'s text changed (the locked identifier insert)');
  return base.replace(LOCKED_INSERT, `BEGIN
             INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
               SELECT x.o, x.a, x.k, x.v, x.p, x.t
               FROM jsonb_to_recordset(p->'bornIds') AS x(n int, o text, a text, k text, v text, p text, t timestamptz)
               WHERE NOT x.n = ANY(deferred);
           EXCEPTION WHEN unique_violation THEN
             RAISE EXCEPTION 'an identifier appeared under its lock' USING ERRCODE = '40001';
           END;`);
}

export const pg036: Migration = {
  version: 36,
  name: 'fast path: plain insert of new identifiers under their locks',
  statements: [fastTrack()],
};
