import type { Migration } from './types.js';

// The write path's functions probe tables by key: a batch is at most a few hundred keys, each an
// index probe (migration 7 already rules out hash and merge joins for the same reason). PL/pgSQL
// plans a statement once per session and, after five calls, keeps a generic plan, costed with the
// table sizes of that moment. A plan made while a table was small (a new store, an org's first
// minutes) chose a sequential scan for `id = ANY(array)`, and kept scanning the whole table once it
// grew: measured on PostgreSQL 15 (bench, replays after a run that created 170,000 profiles), the
// profile lock of headwater_track_fast scanned 170,000 rows to find 449, 0.6-1.0 s a statement,
// 869 calls/s instead of 18,000, 313 requests over 2 s. Without sequential scans the planner takes
// the primary keys whatever size it believes; a table with no usable index is still scanned.
// A later CREATE OR REPLACE of these functions must keep the setting (test/store-plans.test.ts).
export const pg032: Migration = {
  version: 32,
  name: 'write functions plan index probes whatever the table sizes',
  statements: [
    `ALTER FUNCTION headwater_track_fast(jsonb) SET enable_seqscan = off`,
    `ALTER FUNCTION headwater_bulk_begin(jsonb) SET enable_seqscan = off`,
    `ALTER FUNCTION headwater_bulk_write(jsonb) SET enable_seqscan = off`,
  ],
};
