import type { Migration } from './types.js';
import { pg038 } from './pg-038-history-day-counts.js';

// The day totals' trigger function (migration 38) returns at once when its statement added no
// history rows. Postgres fires statement triggers for inserts of no rows too, and the fast path's
// statement has a history insert that writes nothing whenever no segment names the event: measured
// on PGlite, a statement of that shape took 314-338 us with migration 38's triggers against 278-279
// without (35-60 us more); with this exit 293-325 against 272-315 (13-30 us more: the transition
// table and the call remain).
// Otherwise migration 38's function.
const OPEN = `BEGIN
       IF TG_OP <> 'INSERT' THEN`;

function counts(): string {
  const base = pg038.statements[1]!;
  if (!base.includes('CREATE FUNCTION headwater_history_counts()') || base.split(OPEN).length !== 2) {
    throw new Error('migration 39: migration 38\'s text changed');
  }
  return base
    .replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION')
    // Nested: a condition naming \`added\` is planned whole, and a DELETE trigger has no such table.
    .replace(OPEN, `BEGIN
       IF TG_OP = 'INSERT' THEN
         IF NOT EXISTS (SELECT FROM added) THEN
           RETURN NULL;
         END IF;
       END IF;
       IF TG_OP <> 'INSERT' THEN`);
}

export const pg039: Migration = {
  version: 39,
  name: 'day totals: no work for a statement that added no history',
  statements: [counts()],
};
