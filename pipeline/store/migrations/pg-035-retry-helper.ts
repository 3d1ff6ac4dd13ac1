import type { Migration } from './types.js';

// A statement that must fail as a concurrency failure (SQLSTATE 40001: the caller runs its work
// again) from inside SQL. Used where a check and the COMMIT travel in one round trip (segment
// transitions on the fast path, pipeline/segments/membership.ts): the check must abort the
// transaction before the COMMIT that follows it runs, which a check in JavaScript after the
// answer cannot do.
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
