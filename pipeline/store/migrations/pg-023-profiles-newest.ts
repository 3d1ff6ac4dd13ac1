import type { Migration } from './types.js';

// `GET /v1/profiles` without an identifier lists an org's live profiles newest first (ids sort by
// creation time): this index answers each page without sorting every profile of the org.
export const pg023: Migration = {
  version: 23,
  name: 'live profiles of an org, newest first',
  statements: [
    `CREATE INDEX profiles_org_live ON profiles (org_id, id DESC) WHERE merged_into IS NULL`,
  ],
};
