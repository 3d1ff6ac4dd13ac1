import type { Migration } from './types.js';

export const pg002: Migration = {
  version: 2,
  name: 'profiles, identifiers, message dedup',
  statements: [
    `CREATE TABLE profiles (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      app_id text NOT NULL,
      source_id text NOT NULL,
      environment text NOT NULL,
      traits jsonb NOT NULL DEFAULT '{}'::jsonb,
      consent jsonb NOT NULL DEFAULT '{}'::jsonb,
      merged_into text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL)`,
    `CREATE INDEX profiles_org_app ON profiles (org_id, app_id, id)`,
    `CREATE INDEX profiles_merged_into ON profiles (merged_into) WHERE merged_into IS NOT NULL`,
    // One row per identifier value: the primary key is what makes concurrent calls for the same
    // identifier land on one profile.
    `CREATE TABLE identifiers (
      org_id text NOT NULL,
      app_id text NOT NULL,
      kind text NOT NULL,
      value text NOT NULL,
      profile_id text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (org_id, app_id, kind, value))`,
    `CREATE INDEX identifiers_profile ON identifiers (profile_id)`,
    // Permanent messageId dedup per (org, app): the first answer is kept and replayed.
    `CREATE TABLE messages (
      org_id text NOT NULL,
      app_id text NOT NULL,
      message_id text NOT NULL,
      kind text NOT NULL,
      result jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, app_id, message_id))`,
  ],
};
