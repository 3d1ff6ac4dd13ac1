import type { Migration } from './types.js';

// Calls that failed on their own, again and again, while Postgres answered (pipeline/isolate.ts):
// kept here with the error instead of coming back from the stream forever. A call's id is unique,
// so a batch that is redelivered after keeping one keeps it once.
export const pg010: Migration = {
  version: 10,
  name: 'dead letters',
  statements: [
    `CREATE TABLE dead_letters (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      call jsonb NOT NULL,
      error text NOT NULL,
      attempts int NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE INDEX dead_letters_org ON dead_letters (org_id, created_at)`,
  ],
};
