import type { Migration } from './types.js';

// profiles_org_app (org_id, app_id, id) serves no statement: profile lists and segment walks go by
// profiles_org_live (org_id, id) WHERE merged_into IS NULL, single profiles by the primary key, and
// merged records by profiles_merged_into. It only cost every new profile one more index entry
// (~5-10 µs per row on embedded Postgres, in a write of 143-182 µs per new user).
export const pg030: Migration = {
  version: 30,
  name: 'drop the unused profiles (org, app) index',
  statements: [
    `DROP INDEX IF EXISTS profiles_org_app`,
  ],
};
