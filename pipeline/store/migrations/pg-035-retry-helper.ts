import type { Migration } from './types.js';

// A statement that must fail as a concurrency failure (SQLSTATE 40001: the caller runs its work
// again) from inside SQL. Segment transitions check with it that every membership change applied
// (pipeline/segments/membership.ts): on the fast path their COMMIT travels in the same round trip,
// and the check must abort the transaction before that COMMIT runs, which a check in JavaScript
// after the answer cannot do.
export const pg035: Migration = {
  version: 35,
  name: 'headwater_retry: fail a statement as a concurrency failure',
  statements: [
    `CREATE OR REPLACE FUNCTION headwater_retry(reason text) RETURNS int LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
       RAISE EXCEPTION '%', reason USING ERRCODE = '40001';
     END $fn$`,
  ],
};
