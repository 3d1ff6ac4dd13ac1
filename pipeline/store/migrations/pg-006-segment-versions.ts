import type { Migration } from './types.js';

export const pg006: Migration = {
  version: 6,
  name: 'segment versions read under the shared segment locks',
  statements: [
    // Takes the orgs' shared segment locks, then reads their versions. VOLATILE: the read takes a
    // fresh snapshot after the locks were granted, so one round trip does both (a plain statement's
    // snapshot would predate a lock acquired inside it).
    `CREATE FUNCTION headwater_segment_versions(org_ids text[], lock_keys bigint[])
     RETURNS TABLE (org text, ver bigint) LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
       PERFORM pg_advisory_xact_lock_shared(k) FROM unnest(lock_keys) AS k ORDER BY k;
       RETURN QUERY SELECT o.id, o.segments_version FROM orgs o WHERE o.id = ANY(org_ids);
     END $fn$`,
  ],
};
