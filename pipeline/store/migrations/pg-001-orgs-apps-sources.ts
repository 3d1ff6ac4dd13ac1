import type { Migration } from './types.js';

export const pg001: Migration = {
  version: 1,
  name: 'orgs, credentials, apps, sources',
  statements: [
    `CREATE TABLE orgs (
      id text PRIMARY KEY,
      name text NOT NULL,
      limits jsonb NOT NULL DEFAULT '{}'::jsonb,
      settings jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now())`,
    // Only a sha256 of each key is kept; the key itself is shown once.
    `CREATE TABLE credentials (
      hash text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs(id),
      kind text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz)`,
    `CREATE INDEX credentials_org ON credentials (org_id)`,
    `CREATE TABLE apps (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs(id),
      name text NOT NULL,
      environment text NOT NULL,
      status text NOT NULL DEFAULT 'active',
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      archived_at timestamptz,
      last_received_at timestamptz)`,
    `CREATE INDEX apps_org ON apps (org_id, id DESC)`,
    `CREATE TABLE sources (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs(id),
      app_id text NOT NULL REFERENCES apps(id),
      kind text NOT NULL,
      config jsonb NOT NULL DEFAULT '{}'::jsonb,
      secret_enc text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      archived_at timestamptz,
      last_received_at timestamptz)`,
    `CREATE INDEX sources_app ON sources (org_id, app_id, id DESC)`,
  ],
};
