import type { Migration } from './types.js';
import { claimDueFunction } from './pg-029-claim-due.js';

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
    claimDueFunction('CREATE OR REPLACE FUNCTION', 'WHERE x.id = ANY(ARRAY(SELECT id FROM pick))'),
  ],
};
