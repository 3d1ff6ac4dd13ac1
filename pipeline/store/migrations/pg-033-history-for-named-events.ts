import type { Migration } from './types.js';
import { pg027 } from './pg-027-fast-identify.js';

// Segment history is written only for event names a segment of the org names (and the system
// events): history of other names was never read, and was a quarter of the fast path's cost on the
// embedded store (bench/store-costs.ts). The caller of headwater_track_fast says which names keep
// history (`watch`: org id, chr(1), name), decided from the segment definitions at the version the
// statement checks; a segment that names a name for the first time fills its history from the
// stored answers under the org's exclusive segment lock (pipeline/segments/history.ts). Rows of
// names no segment names any more stay until a segment names them again (the fill replaces them).
// Otherwise the function is migration 27's, with migration 32's setting (CREATE OR REPLACE resets it).
//   p: { ...migration 27, watch: [orgId || chr(1) || name] }
const HIST = `hist AS (
         INSERT INTO event_history (profile_id, name, ts)
         SELECT ins.e->>'profileId', ins.e->>'event', (ins.e->>'timestamp')::timestamptz FROM ins)`;
const SETTINGS = 'SET enable_hashjoin = off SET enable_mergejoin = off AS $fn$';
const DECLARE = 'held jsonb := \'[]\';';

function fastTrack(): string {
  const base = pg027.statements[0]!;
  for (const part of [HIST, SETTINGS, DECLARE]) {
    if (base.split(part).length !== 2) throw new Error(`migration 33: migration 27's text changed (${part.slice(0, 30)})`);
  }
  return base
    .replace(SETTINGS, 'SET enable_hashjoin = off SET enable_mergejoin = off SET enable_seqscan = off AS $fn$')
    .replace(DECLARE, `${DECLARE}
       watch text[] := ARRAY(SELECT jsonb_array_elements_text(COALESCE(p->'watch', '[]')));`)
    .replace(HIST, `hist AS (
         INSERT INTO event_history (profile_id, name, ts)
         SELECT ins.e->>'profileId', ins.e->>'event', (ins.e->>'timestamp')::timestamptz FROM ins
         WHERE cardinality(watch) > 0 AND ins.org_id || chr(1) || (ins.e->>'event') = ANY(watch))`);
}

export const pg033: Migration = {
  version: 33,
  name: 'segment history only for the event names segments name',
  statements: [fastTrack()],
};
