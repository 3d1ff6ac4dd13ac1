import type { Migration } from './types.js';

// The bulk ingestion path (pipeline/bulk.ts) in two round trips instead of about ten: every
// statement costs a round trip, two socket syscalls on each side, and a parse and plan; plpgsql
// keeps its statements' plans for the session. Parameters travel as one jsonb document.
// plpgsql plans its statements generically, guessing 100 rows for every jsonb_to_recordset: joined
// with a large table that chose hash joins over full scans (an UPDATE of 32 messages took 12 ms on
// PGlite). A batch is at most a few hundred keys, each an index probe: only nested loops make sense.
const INDEX_JOINS = 'SET enable_hashjoin = off SET enable_mergejoin = off';

/** A profile row `x` as jsonb, times as headwater_iso text (migrations 7 and 27). */
export const PROFILE_JSON = `jsonb_build_object(
  'id', x.id, 'org_id', x.org_id, 'app_id', x.app_id, 'source_id', x.source_id, 'environment', x.environment,
  'traits', x.traits, 'consent', x.consent, 'merged_into', x.merged_into,
  'created_at', headwater_iso(x.created_at), 'updated_at', headwater_iso(x.updated_at))`;

export const pg007: Migration = {
  version: 7,
  name: 'bulk ingestion functions',
  statements: [
    // The ISO 8601 text the service's type parser gives a timestamptz (UTC, milliseconds, Z).
    // STABLE like to_char: a SQL function is inlined into its caller only when its declared
    // volatility is not stricter than its body's (an IMMUTABLE one ran as a nested statement per row).
    `CREATE FUNCTION headwater_iso(t timestamptz) RETURNS text LANGUAGE sql STABLE AS
     $fn$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $fn$`,
    // In the bulk path's lock order: messageId claims (in the order given: sorted), identifier
    // advisory locks (sorted), the owning profiles FOR UPDATE (by id; looked up again while one
    // turns out merged meanwhile, at most `attempts` times), then the orgs' shared segment locks and
    // versions. VOLATILE: every statement reads a snapshot taken after the locks before it.
    // With \`serial\` (embedded Postgres: one session, so no transaction runs beside this one) no
    // lock is taken and nothing is claimed: \`won\` lists the messageIds not stored yet, and
    // headwater_bulk_write stores them with their answers.
    //   p: { serial, attempts, claims: [{o,a,m,k}], locks: [bigint text], idents: [{o,a,k,v}], segOrgs: [text], segKeys: [bigint text] }
    //   -> { won: [[o,a,m]], settled, owners: [[o,a,k,v,profileId]], profiles: [row], held: [[profileId,k,v,createdAt]], versions: [[org,ver]] }
    `CREATE FUNCTION headwater_bulk_begin(p jsonb) RETURNS jsonb LANGUAGE plpgsql VOLATILE ${INDEX_JOINS} AS $fn$
     DECLARE
       serial boolean := COALESCE((p->>'serial')::boolean, false);
       won jsonb := '[]';
       owners jsonb := '[]';
       profs jsonb := '[]';
       held jsonb := '[]';
       versions jsonb := '[]';
       ids text[] := '{}';
       locked int;
       live boolean;
       settled boolean := false;
     BEGIN
       IF jsonb_array_length(p->'claims') > 0 THEN
         IF serial THEN
           SELECT COALESCE(jsonb_agg(jsonb_build_array(x.o, x.a, x.m)), '[]') INTO won
             FROM jsonb_to_recordset(p->'claims') AS x(o text, a text, m text)
             WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.org_id = x.o AND m.app_id = x.a AND m.message_id = x.m);
         ELSE
           WITH ins AS (
             INSERT INTO messages (org_id, app_id, message_id, kind, result)
             SELECT x.o, x.a, x.m, x.k, '{}'::jsonb FROM jsonb_to_recordset(p->'claims') AS x(o text, a text, m text, k text)
             ON CONFLICT DO NOTHING RETURNING org_id, app_id, message_id)
           SELECT COALESCE(jsonb_agg(jsonb_build_array(org_id, app_id, message_id)), '[]') INTO won FROM ins;
         END IF;
       END IF;
       IF NOT serial THEN
         PERFORM pg_advisory_xact_lock(k) FROM (SELECT e::bigint AS k FROM jsonb_array_elements_text(p->'locks') AS e) s ORDER BY k;
       END IF;
       FOR attempt IN 1..(p->>'attempts')::int LOOP
         SELECT COALESCE(jsonb_agg(jsonb_build_array(i.org_id, i.app_id, i.kind, i.value, i.profile_id)), '[]'),
                COALESCE(array_agg(DISTINCT i.profile_id), '{}')
           INTO owners, ids
           FROM identifiers i JOIN jsonb_to_recordset(p->'idents') AS t(o text, a text, k text, v text)
             ON i.org_id = t.o AND i.app_id = t.a AND i.kind = t.k AND i.value = t.v;
         IF cardinality(ids) = 0 THEN settled := true; EXIT; END IF;
         IF serial THEN
           SELECT count(*), COALESCE(bool_and(x.merged_into IS NULL), true), COALESCE(jsonb_agg(${PROFILE_JSON}), '[]')
             INTO locked, live, profs FROM profiles x WHERE x.id = ANY(ids);
         ELSE
           SELECT count(*), COALESCE(bool_and(x.merged_into IS NULL), true), COALESCE(jsonb_agg(${PROFILE_JSON}), '[]')
             INTO locked, live, profs
             FROM (SELECT * FROM profiles WHERE id = ANY(ids) ORDER BY id FOR UPDATE) x;
         END IF;
         IF locked = cardinality(ids) AND live THEN settled := true; EXIT; END IF;
       END LOOP;
       IF settled AND cardinality(ids) > 0 THEN
         SELECT COALESCE(jsonb_agg(jsonb_build_array(i.profile_id, i.kind, i.value, headwater_iso(i.created_at))
                ORDER BY i.created_at, i.kind, i.value), '[]')
           INTO held FROM identifiers i WHERE i.profile_id = ANY(ids);
       END IF;
       IF jsonb_array_length(p->'segOrgs') > 0 THEN
         IF serial THEN
           SELECT COALESCE(jsonb_agg(jsonb_build_array(o.id, o.segments_version)), '[]') INTO versions
             FROM orgs o WHERE o.id IN (SELECT jsonb_array_elements_text(p->'segOrgs'));
         ELSE
           SELECT COALESCE(jsonb_agg(jsonb_build_array(v.org, v.ver)), '[]') INTO versions
             FROM headwater_segment_versions(ARRAY(SELECT jsonb_array_elements_text(p->'segOrgs')),
                                             ARRAY(SELECT e::bigint FROM jsonb_array_elements_text(p->'segKeys') AS e)) AS v;
         END IF;
       END IF;
       RETURN jsonb_build_object('won', won, 'settled', settled, 'owners', owners, 'profiles', profs, 'held', held, 'versions', versions);
     END $fn$`,
    // The bulk path's writes. An identifier that appears although it was read absent under its
    // advisory lock (someone attached it without the lock) fails the transaction as a
    // serialization failure: the chunk's calls then run one by one.
    //   p: { withdrawn: [{o,a,m}], created: [{id,o,a,s,e,tr,co,t,u}], changed: [{id,tr,co,u}],
    //        idents: [{o,a,k,v,p,t}], recorded: [{o,a,m,k,r}], history: [{p,n,t}] }
    `CREATE FUNCTION headwater_bulk_write(p jsonb) RETURNS void LANGUAGE plpgsql VOLATILE ${INDEX_JOINS} AS $fn$
     DECLARE n int;
     BEGIN
       DELETE FROM messages m USING jsonb_to_recordset(p->'withdrawn') AS t(o text, a text, m text)
         WHERE m.org_id = t.o AND m.app_id = t.a AND m.message_id = t.m;
       INSERT INTO profiles (id, org_id, app_id, source_id, environment, traits, consent, created_at, updated_at)
         SELECT x.id, x.o, x.a, x.s, x.e, x.tr, x.co, x.t, x.u
         FROM jsonb_to_recordset(p->'created') AS x(id text, o text, a text, s text, e text, tr jsonb, co jsonb, t timestamptz, u timestamptz);
       UPDATE profiles pr SET traits = pr.traits || x.tr, consent = pr.consent || x.co, updated_at = x.u
         FROM jsonb_to_recordset(p->'changed') AS x(id text, tr jsonb, co jsonb, u timestamptz) WHERE pr.id = x.id;
       INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at)
         SELECT x.o, x.a, x.k, x.v, x.p, x.t
         FROM jsonb_to_recordset(p->'idents') AS x(o text, a text, k text, v text, p text, t timestamptz)
         ON CONFLICT DO NOTHING;
       GET DIAGNOSTICS n = ROW_COUNT;
       IF n <> jsonb_array_length(p->'idents') THEN
         RAISE EXCEPTION 'an identifier appeared under its lock' USING ERRCODE = '40001';
       END IF;
       -- Claimed in headwater_bulk_begin (the answer replaces the claim), or, serial, stored now.
       INSERT INTO messages (org_id, app_id, message_id, kind, result)
         SELECT x.o, x.a, x.m, x.k, x.r FROM jsonb_to_recordset(p->'recorded') AS x(o text, a text, m text, k text, r jsonb)
         ON CONFLICT (org_id, app_id, message_id) DO UPDATE SET result = EXCLUDED.result;
       INSERT INTO event_history (profile_id, name, ts)
         SELECT x.p, x.n, x.t FROM jsonb_to_recordset(p->'history') AS x(p text, n text, t timestamptz);
     END $fn$`,
  ],
};
