import type { Migration } from './types.js';

// The journey runner's claim (journeys/executions/claim.ts) as a function: plpgsql keeps the
// statement's plan for the session, where sent as text it was parsed and planned for every claim
// (on PGlite ~3.8 ms a claim of ~8 executions in the journey bench). The statement is unchanged:
// each org's oldest due executions (one probe of executions_due_org per org), ranked per org after
// what the claiming process already runs for it, taken in rank order under FOR UPDATE SKIP LOCKED
// with a lease, no org past `p_per_org`. It returns the claimed rows whole.

/**
 * The claim function's text. Migration 31 replaces it with the same statement but for how the
 * UPDATE finds the picked rows, so both build it here (`update`: the UPDATE's FROM / WHERE line).
 */
export const claimDueFunction = (create: 'CREATE FUNCTION' | 'CREATE OR REPLACE FUNCTION', update: string): string =>
  `${create} headwater_claim_due(p_secs float8, p_limit int, p_lease text, p_orgs text[], p_used int[], p_per_org int)
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
     ${update}
     RETURNING x.*;
     END $fn$`;

export const pg029: Migration = {
  version: 29,
  name: 'journey claim as a function',
  statements: [
    claimDueFunction('CREATE FUNCTION', 'FROM pick WHERE x.id = pick.id'),
  ],
};
