import type { Migration } from './types.js';

// What the pipeline drops or collapses on purpose, counted by every process (pipeline/drops.ts):
// a message the event stream refused as a repeat, a replayed track whose re-emitted event
// collapses in ClickHouse, a call whose caller had already been answered 503. An operator reads
// them beside the reconciliation of stored and landed events (POST /v1/events/reconcile).
export const pg017: Migration = {
  version: 17,
  name: 'drop counts',
  statements: [
    `CREATE TABLE drop_counts (
      reason text PRIMARY KEY,
      count bigint NOT NULL,
      first_at timestamptz NOT NULL DEFAULT now(),
      last_at timestamptz NOT NULL DEFAULT now()
    )`,
  ],
};
