import type { Migration } from './types.js';

// Plans of the journey claim that hold as the store grows. The claim is a plpgsql function, so after
// five calls it runs a generic plan, one made without the parameters' values (how many to claim, the
// orgs' shares). Measured on embedded Postgres with 15,000 completed and 10,000 due executions of
// two orgs (the journey bench), the generic plan of migration 29's statement took 31-47 ms a claim:
// - each org's probe went by executions_due (wake_at) and filtered on org_id, so the probe of an org
//   with nothing due walked every other org's due executions (4,600-7,100 rows removed per probe);
// - the UPDATE, estimating ~2,000 picked rows, joined them to a sequential scan of executions.
// The UPDATE now takes the picked ids as an array (always by primary key), and executions_due goes:
// the per-org executions_due_org (org_id, wake_at) serves the claim, and the runner's "next due"
// look (journeys/executions/runner.ts) probes it per org too. Same data: 4-6 ms a claim. One index
// fewer is also one entry fewer for every update of an execution that moves it.
export const pg031: Migration = {
  version: 31,
  name: 'journey claim by primary key and the per-org due index',
  statements: [
    `DROP INDEX IF EXISTS executions_due`,
    `CREATE OR REPLACE FUNCTION headwater_claim_due(p_secs float8, p_limit int, p_lease text, p_orgs text[], p_used int[], p_per_org int)
     RETURNS SETOF executions LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
       RETURN QUERY WITH used AS (SELECT * FROM unnest(p_orgs, p_used) AS u(org_id, n)),
     cand AS MATERIALIZED (
       SELECT d.id, d.wake_at, COALESCE(u.n, 0) + row_number() OVER (PARTITION BY o.id ORDER BY d.wake_at, d.id) AS slot
       FROM orgs o LEFT JOIN used u ON u.org_id = o.id
       CROSS JOIN LATERAL (
         SELECT e.id, e.wake_at FROM executions e
         WHERE e.org_id = o.id AND e.status IN ('running', 'waiting') AND e.wake_at <= now()
           AND (e.lease_until IS NULL OR e.lease_until < now())
         ORDER BY e.wake_at LIMIT LEAST(p_limit, GREATEST(p_per_org - COALESCE(u.n, 0), 0))) d),
     pick AS (
       SELECT p.id FROM (SELECT cand.id FROM cand WHERE cand.slot <= p_per_org ORDER BY cand.slot, cand.wake_at LIMIT p_limit) c
       CROSS JOIN LATERAL (SELECT x.id FROM executions x WHERE x.id = c.id AND x.status IN ('running', 'waiting')
         AND x.wake_at <= now() AND (x.lease_until IS NULL OR x.lease_until < now()) FOR UPDATE SKIP LOCKED) p)
     UPDATE executions x SET lease_until = now() + make_interval(secs => p_secs), lease_id = p_lease, attempts = x.attempts + 1
     WHERE x.id = ANY(ARRAY(SELECT id FROM pick))
     RETURNING x.*;
     END $fn$`,
  ],
};
