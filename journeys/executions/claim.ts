// The runner's claim, fair across orgs: each org's oldest due executions are looked at (one probe
// of executions_due_org per org, so a large backlog of one org hides nobody else's work), ranked
// per org after what this process already runs for that org, and taken in rank order: round-robin
// across orgs, the org with the fewest activations in hand first. No org gets more than `perOrg`
// activations of this process at once.
// The candidates are computed once (MATERIALIZED) and then locked one primary-key lookup each: left
// to itself, the planner of a store without statistics (embedded, before its first ANALYZE) joined
// them to every due execution and evaluated the candidates once per due row (165 ms per claim with
// 5,000 due, 0.6 ms in this form). The statement is headwater_claim_due (migration 29), which
// returns the claimed rows whole.
import type pg from 'pg';

export interface ClaimInput {
  limit: number;
  /** Activations this process has in hand, per org. */
  used: Map<string, number>;
  perOrg: number;
  leaseMs: number;
  leaseId: string;
}

export async function claimDue<R extends pg.QueryResultRow>(pool: pg.Pool, c: ClaimInput): Promise<R[]> {
  const orgs = [...c.used.keys()];
  // headwater_claim_due (migration 29) holds the statement, so its plan is kept for the session.
  const r = await pool.query<R>('SELECT * FROM headwater_claim_due($1, $2, $3, $4::text[], $5::int[], $6)',
    [c.leaseMs / 1000, c.limit, c.leaseId, orgs, orgs.map((k) => c.used.get(k)!), c.perOrg]);
  return r.rows;
}
