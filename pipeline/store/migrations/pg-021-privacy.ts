import type { Migration } from './types.js';

// Privacy and data lifecycle (docs/privacy.md).
// `erasures`: the durable erasure job. `profile_ids` and `identifiers` are fixed at request time (the
// profile and the records merged into it); a process claims a pending row with SKIP LOCKED and a
// lease and runs its idempotent steps again from the start after a crash, so `completed` is only
// ever set once every step finished. At most one pending erasure per profile.
// `suppressions`: sha256 of suppressed identifier values (never the values themselves), per org;
// `orgs.suppressions_version` moves on every change so that each process reloads its cached set.
// `orgs.retention_*`: the retention sweep claims an org (SKIP LOCKED, a lease) so that several
// processes never sweep the same org at once; `retention_swept_at` spaces the passes.
// The indexes serve the erasure (e-mails and deliveries by execution) and the sweep (rows by age).
export const pg021: Migration = {
  version: 21,
  name: 'erasures, suppressions, retention',
  statements: [
    `CREATE TABLE erasures (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      profile_id text NOT NULL,
      profile_ids text[] NOT NULL,
      identifiers jsonb NOT NULL,
      suppress boolean NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'completed')),
      step text,
      attempts int NOT NULL DEFAULT 0,
      lease_until timestamptz,
      lease_token text,
      requested_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz)`,
    `CREATE UNIQUE INDEX erasures_one_pending ON erasures (org_id, profile_id) WHERE status = 'pending'`,
    `CREATE INDEX erasures_org ON erasures (org_id, id DESC)`,
    `CREATE INDEX erasures_due ON erasures (requested_at) WHERE status = 'pending'`,
    `CREATE TABLE suppressions (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      kind text NOT NULL,
      hash text NOT NULL,
      erasure_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (org_id, kind, hash))`,
    `CREATE INDEX suppressions_org ON suppressions (org_id, id DESC)`,
    `ALTER TABLE orgs ADD COLUMN suppressions_version bigint NOT NULL DEFAULT 0`,
    `ALTER TABLE orgs ADD COLUMN retention_swept_at timestamptz`,
    `ALTER TABLE orgs ADD COLUMN retention_lease_until timestamptz`,
    `CREATE INDEX emails_execution ON emails (execution_id) WHERE execution_id IS NOT NULL`,
    `CREATE INDEX emails_created ON emails (org_id, created_at)`,
    `CREATE INDEX webhook_deliveries_execution ON webhook_deliveries (execution_id) WHERE execution_id IS NOT NULL`,
    `CREATE INDEX webhook_deliveries_created ON webhook_deliveries (org_id, created_at)`,
    `CREATE INDEX executions_ended ON executions (org_id, ended_at) WHERE ended_at IS NOT NULL`,
    `CREATE INDEX executions_profile ON executions (org_id, profile_id)`,
    `CREATE INDEX segment_rejections_created ON segment_rejections (org_id, created_at)`,
  ],
};
