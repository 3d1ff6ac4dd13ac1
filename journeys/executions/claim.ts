// The runner's claim, fair across orgs: each org's oldest due executions are looked at (one probe
// of executions_due_org per org, so a large backlog of one org hides nobody else's work), ranked
// per org after what this process already runs for that org, and taken in rank order: round-robin
// across orgs, the org with the fewest activations in hand first. No org gets more than `perOrg`
// activations of this process at once.
// The candidates are computed once (MATERIALIZED) and then locked one primary-key lookup each: left
// to itself, the planner of a store without statistics (embedded, before its first ANALYZE) joined
// them to every due execution and evaluated the candidates once per due row (165 ms per claim with
// 5,000 due, 0.6 ms in this form).
import type pg from 'pg';

export interface ClaimInput {
  limit: number;
  /** Activations this process has in hand, per org. */
  used: Map<string, number>;
  perOrg: number;
  leaseMs: number;
  leaseId: string;
}

export const CLAIMED_COLUMNS = `x.id, x.org_id, x.journey_key, x.version_id, x.app_id, x.source_id, x.profile_id, x.environment, x.run_id, x.run_seq,
  x.event, x.status, x.journal, x.wait, x.wake_value, x.lease_id, x.attempts, x.started_at`;

export async function claimDue<R extends pg.QueryResultRow>(pool: pg.Pool, c: ClaimInput): Promise<R[]> {
  const orgs = [...c.used.keys()];
  const r = await pool.query<R>(
    `WITH used AS (SELECT * FROM unnest($4::text[], $5::int[]) AS u(org_id, n)),
     cand AS MATERIALIZED (
       SELECT d.id, d.wake_at, COALESCE(u.n, 0) + row_number() OVER (PARTITION BY o.id ORDER BY d.wake_at, d.id) AS slot
       FROM orgs o LEFT JOIN used u ON u.org_id = o.id
       CROSS JOIN LATERAL (
         SELECT e.id, e.wake_at FROM executions e
         WHERE e.org_id = o.id AND e.status IN ('running', 'waiting') AND e.wake_at <= now()
           AND (e.lease_until IS NULL OR e.lease_until < now())
         ORDER BY e.wake_at LIMIT LEAST($2, GREATEST($6 - COALESCE(u.n, 0), 0))) d),
     pick AS (
       SELECT p.id FROM (SELECT cand.id FROM cand WHERE cand.slot <= $6 ORDER BY cand.slot, cand.wake_at LIMIT $2) c
       CROSS JOIN LATERAL (SELECT x.id FROM executions x WHERE x.id = c.id AND x.status IN ('running', 'waiting')
         AND x.wake_at <= now() AND (x.lease_until IS NULL OR x.lease_until < now()) FOR UPDATE SKIP LOCKED) p)
     UPDATE executions x SET lease_until = now() + make_interval(secs => $1), lease_id = $3, attempts = x.attempts + 1
     FROM pick WHERE x.id = pick.id
     RETURNING ${CLAIMED_COLUMNS}`,
    [c.leaseMs / 1000, c.limit, c.leaseId, orgs, orgs.map((k) => c.used.get(k)!), c.perOrg]);
  return r.rows;
}
