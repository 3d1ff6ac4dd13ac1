import type { Migration } from './types.js';
import { pg036 } from './pg-036-plain-identifier-insert.js';

// headwater_track_fast answers in json, not jsonb. Its answer is only ever sent to the caller as
// text, and building it as jsonb copied every part of it again at each level (the stored answers
// of replayed messageIds into jsonb_agg, that into the answer object, then the whole out as text).
// A json answer is built as text once. Measured on PGlite, 400-call statements of messageIds all
// stored before (batch20-replay's shape): 61.8 and 60.9 us a call against 48.8 and 48.1, with calls
// of known and of new profiles unchanged (52.8/52.0 and 105.8/105.1), the functions alternated on
// one store. The caller parses both alike (pg reads json and jsonb with JSON.parse). The stored
// answers written (the messages table's result column) stay jsonb. A return type cannot be changed
// in place: the function is dropped and created in this migration's transaction.
// Otherwise migration 36's function (which keeps migrations 32, 33 and 34's settings).
const STORED = `jsonb_build_object('profileId', x.p)`;

function fastTrack(): string {
  const base = pg036.statements[0]!;
  const parts = base.split(STORED);
  if (parts.length !== 2 || !base.includes('RETURNS jsonb')) throw new Error('migration 37: migration 36\'s text changed');
  const swap = (t: string) => t
    .replace('CREATE OR REPLACE FUNCTION', 'CREATE FUNCTION')
    .replace('RETURNS jsonb', 'RETURNS json')
    .replace(/\b(replays|owners|profs|held) jsonb\b/g, '$1 json')
    .replace(/\bjsonb_(build_object|agg|build_array)\(/g, 'json_$1(')
    .replace(/'\[\]'::jsonb/g, `'[]'::json`)
    .replace('to_jsonb(deferred)', 'to_json(deferred)');
  return parts.map(swap).join(STORED);
}

export const pg037: Migration = {
  version: 37,
  name: 'fast path: the answer built as json',
  statements: ['DROP FUNCTION headwater_track_fast(jsonb)', fastTrack()],
};
