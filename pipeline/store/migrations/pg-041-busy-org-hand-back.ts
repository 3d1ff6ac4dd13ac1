import type { Migration } from './types.js';
import { pg040 } from './pg-040-fast-track-attach-first.js';

// Ingestion takes an org's segment lock (and, where it holds calls, its catalog lock) shared; a
// segment change, promote or deny holds it exclusively for as long as it works (seconds on a large
// org). The ingestion workers ask before each batch which orgs are busy so (pipeline/busy-orgs.ts),
// but a change that begins after that question still made the batch wait for it, and every other
// org's calls in the batch with it. headwater_org_lock_shared takes such a lock shared; on the
// ingestion workers' connections (the session setting `headwater.busy_orgs` = 'hand_back') it
// never waits: when the lock is held or asked for exclusively it raises HWBSY with the org id as
// its detail, the transaction rolls back, and the worker hands that org's calls back to the stream
// for a moment while the rest of the batch goes on. Elsewhere (API routes, embedded Postgres) it
// waits, as before.
const ORG_LOCK_SHARED = `CREATE FUNCTION headwater_org_lock_shared(k bigint, org text) RETURNS void
     LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
       IF current_setting('headwater.busy_orgs', true) = 'hand_back' THEN
         IF NOT pg_try_advisory_xact_lock_shared(k) THEN
           RAISE EXCEPTION 'org % is being changed; its calls come again shortly', org USING ERRCODE = 'HWBSY', DETAIL = org;
         END IF;
       ELSE
         PERFORM pg_advisory_xact_lock_shared(k);
       END IF;
     END $fn$`;

// The segment versions under the orgs' shared segment locks (migration 5), through the function above.
const SEGMENT_VERSIONS = `CREATE OR REPLACE FUNCTION headwater_segment_versions(org_ids text[], lock_keys bigint[])
     RETURNS TABLE (org text, ver bigint) LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
       PERFORM headwater_org_lock_shared(x.k, x.o) FROM unnest(lock_keys, org_ids) AS x(k, o) ORDER BY x.k;
       RETURN QUERY SELECT o.id, o.segments_version FROM orgs o WHERE o.id = ANY(org_ids);
     END $fn$`;

// headwater_track_fast's shared segment locks: p->'segKeys' holds the key of each org of p->'orgs', in order.
const FROM = `         PERFORM pg_advisory_xact_lock_shared(k)
           FROM (SELECT e::bigint AS k FROM jsonb_array_elements_text(p->'segKeys') AS e) s ORDER BY k;`;
const TO = `         PERFORM headwater_org_lock_shared(s.k, s.o)
           FROM (SELECT (p->'segKeys'->>(i - 1))::bigint AS k, p->'orgs'->(i - 1)->>'id' AS o
                 FROM generate_series(1, jsonb_array_length(p->'segKeys')) AS i) s ORDER BY s.k;`;

function fastTrack(): string {
  const base = pg040.statements[0]!;
  if (base.split(FROM).length !== 2) throw new Error('migration 41: migration 40\'s text changed');
  return base.replace(FROM, TO);
}

export const pg041: Migration = {
  version: 41,
  name: 'busy orgs: ingestion workers hand their calls back instead of waiting for their lock',
  statements: [ORG_LOCK_SHARED, SEGMENT_VERSIONS, fastTrack()],
};
