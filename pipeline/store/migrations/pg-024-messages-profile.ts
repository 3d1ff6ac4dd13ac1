import type { Migration } from './types.js';

// Stored answers by the profile they name (an identify answer's `profileId`, a track answer's
// event's): an erasure finds a profile's answers through this index in small paced chunks instead
// of reading every stored answer of the org (docs/privacy.md). The expression must stay identical
// to the one the erasure's delete uses (pipeline/privacy/erase.ts, ANSWER_PROFILE).
export const pg024: Migration = {
  version: 24,
  name: 'stored answers by profile',
  statements: [
    `CREATE INDEX messages_profile ON messages (org_id, (COALESCE(result->>'profileId', result->'event'->>'profileId')))`,
  ],
};
