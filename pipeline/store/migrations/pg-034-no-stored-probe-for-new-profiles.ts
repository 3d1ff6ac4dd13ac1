import type { Migration } from './types.js';
import { pg033 } from './pg-033-history-for-named-events.js';

// headwater_track_fast no longer looks up, before writing, whether the messageIds of lanes that
// create a profile were stored before: one index probe of messages per call, 6 % of the statement
// for a batch of new users on PGlite (95.2 against 89.2 us a call, the two functions alternated on
// one store), to find what almost never happens. A lane whose identifiers are first seen but whose messageId is stored already (a
// messageId reused with other identifiers; a retried call whose identifiers the statement finds
// owned is deferred before, by the identifier check) now shows as a row the insert skipped, and the
// statement fails as a serialization failure, as it did when such a messageId was stored meanwhile:
// the batch then goes to the general path, which answers the stored original and creates nothing.
// Otherwise migration 33's function (which keeps migration 32's setting).
const PROBE = `SELECT COALESCE(array_agg(DISTINCT x.n), '{}') INTO stored
           FROM jsonb_to_recordset(p->'rows') AS x(o text, a text, m text, n int)
           JOIN messages m ON m.org_id = x.o AND m.app_id = x.a AND m.message_id = x.m
           WHERE x.n IS NOT NULL;
         deferred := deferred || stored;`;
const RAISE = `RAISE EXCEPTION 'a new profile''s messageId was stored meanwhile' USING ERRCODE = '40001';`;

function fastTrack(): string {
  const base = pg033.statements[0]!;
  for (const part of [PROBE, RAISE]) {
    if (base.split(part).length !== 2) throw new Error(`migration 34: migration 33's text changed (${part.slice(0, 30)})`);
  }
  return base
    .replace(PROBE, '-- A messageId stored already shows below: the insert skips its row (migration 34).')
    .replace(RAISE, `RAISE EXCEPTION 'a new profile''s messageId is stored already' USING ERRCODE = '40001';`);
}

export const pg034: Migration = {
  version: 34,
  name: 'fast path: no lookup of stored messageIds for new profiles',
  statements: [fastTrack()],
};
