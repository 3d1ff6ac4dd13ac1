import type { Migration } from './types.js';

export const pg004: Migration = {
  version: 4,
  name: 'monthly usage counters',
  statements: [
    // Accepted track calls per org and calendar month (UTC), for the monthly quota.
    `CREATE TABLE org_usage (
      org_id text NOT NULL,
      month text NOT NULL,
      events bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (org_id, month))`,
  ],
};
