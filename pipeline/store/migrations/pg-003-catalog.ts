import type { Migration } from './types.js';

export const pg003: Migration = {
  version: 3,
  name: 'catalog, quarantine, catalog version',
  statements: [
    // Bumped by every catalog or settings change, so ingestion workers detect a stale snapshot with
    // one indexed read per batch instead of reloading the catalog.
    `ALTER TABLE orgs ADD COLUMN catalog_version bigint NOT NULL DEFAULT 0`,
    // Names use the "C" collation: byte order is the same on embedded PGlite and on any server
    // locale, so name-ordered pages (and their cursors) never depend on the deployment.
    `CREATE TABLE catalog_events (
      org_id text NOT NULL,
      name text COLLATE "C" NOT NULL,
      properties jsonb NOT NULL DEFAULT '{}'::jsonb,
      state text NOT NULL CHECK (state IN ('allowed', 'denied')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, name))`,
    `CREATE TABLE catalog_traits (
      org_id text NOT NULL,
      name text COLLATE "C" NOT NULL,
      type text NOT NULL,
      state text NOT NULL CHECK (state IN ('allowed', 'denied')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, name))`,
    // Held calls of the strict policy. `id` gives arrival order within a name; `call` is the whole
    // IngestCall to replay on promote. `json`, not `jsonb`, so a replay sees the body exactly as it
    // arrived (member order included).
    `CREATE TABLE quarantine (
      id bigserial PRIMARY KEY,
      org_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('event', 'trait')),
      name text NOT NULL,
      call json NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE INDEX quarantine_name ON quarantine (org_id, kind, name, id)`,
  ],
};
