import type { Migration } from './types.js';

// Artifacts (content-addressed bytes), pushes, versions and journeys.
export const pg013: Migration = {
  version: 13,
  name: 'artifacts, pushes, versions, journeys',
  statements: [
    // The bytes of an artifact, in chunks of up to 256 KiB, written while the upload arrives. A blob
    // is staged (artifact_uploads) until its artifact row is published; a staged blob whose upload
    // died is removed by the sweep.
    `CREATE TABLE artifact_chunks (
      blob_id text NOT NULL,
      seq int NOT NULL,
      bytes bytea NOT NULL,
      PRIMARY KEY (blob_id, seq))`,
    `CREATE TABLE artifact_uploads (
      blob_id text PRIMARY KEY,
      org_id text NOT NULL,
      started_at timestamptz NOT NULL)`,
    `CREATE INDEX artifact_uploads_started ON artifact_uploads (started_at)`,
    // One row per (org, digest): the publish of a complete, verified blob. Immutable.
    `CREATE TABLE artifacts (
      org_id text NOT NULL,
      digest text NOT NULL,
      kind text NOT NULL,
      size bigint NOT NULL,
      blob_id text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (org_id, digest))`,
    // Pushes are numbered per org; the counter row is also the lock that orders an org's pushes.
    `ALTER TABLE orgs ADD COLUMN push_seq bigint NOT NULL DEFAULT 0`,
    `CREATE TABLE pushes (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      app_id text NOT NULL,
      seq bigint NOT NULL,
      manifest jsonb NOT NULL,
      manifest_digest text NOT NULL,
      source_digest text NOT NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (org_id, seq))`,
    `CREATE INDEX pushes_app ON pushes (org_id, app_id, seq DESC)`,
    // One row per journey or template key whose bundle changed in a push. `module_code` is what the
    // runtime evaluates (a script), `module_digest` its sha256. A compile holds the row until
    // `lease_until`; a row left compiling past its lease is compiled again.
    `CREATE TABLE versions (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      app_id text NOT NULL,
      push_id text NOT NULL,
      push_seq bigint NOT NULL,
      kind text NOT NULL,
      key text NOT NULL,
      manifest jsonb NOT NULL,
      bundle_digest text NOT NULL,
      status text NOT NULL,
      module_digest text,
      module_code text,
      error text,
      pushed_at timestamptz NOT NULL,
      compiled_at timestamptz,
      lease_until timestamptz,
      attempts int NOT NULL DEFAULT 0)`,
    `CREATE INDEX versions_key ON versions (org_id, kind, key, push_seq DESC)`,
    `CREATE INDEX versions_push ON versions (push_id)`,
    `CREATE INDEX versions_compiling ON versions (pushed_at) WHERE status = 'compiling'`,
    // A journey exists once a version of its key was filed; `enabled` is only ever set by PATCH.
    `CREATE TABLE journeys (
      org_id text NOT NULL,
      key text NOT NULL,
      enabled boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (org_id, key))`,
  ],
};
