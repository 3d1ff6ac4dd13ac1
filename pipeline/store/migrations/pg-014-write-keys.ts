import type { Migration } from './types.js';

// Segment-compatible ingestion. A write key is a per-source credential that ships inside web pages
// and apps: only its sha256 is stored (the key is shown once, on creation), `prefix` tells keys
// apart in a list. Deleting a key sets `revoked_at` (the row stays, so a replayed lookup is a miss).
// `segment_rejections` keeps every call a Segment route answered 200 but did not apply (a denied
// event, a bad trait, an over-quota track, a call without an identity...): Segment's SDKs drop a
// request only on 4xx, so what the pipeline refuses per call must be kept where an operator finds it.
// The call is kept as JSON text: jsonb refuses escaped NULs and lone surrogates, which a client may send.
export const pg014: Migration = {
  version: 14,
  name: 'write keys',
  statements: [
    `CREATE TABLE write_keys (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      source_id text NOT NULL REFERENCES sources (id),
      hash text NOT NULL UNIQUE,
      prefix text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz)`,
    `CREATE INDEX write_keys_source ON write_keys (org_id, source_id, created_at)`,
    `CREATE TABLE segment_rejections (
      id bigserial PRIMARY KEY,
      org_id text NOT NULL,
      source_id text NOT NULL,
      message_id text,
      status int NOT NULL,
      code text NOT NULL,
      message text NOT NULL,
      call text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE INDEX segment_rejections_org ON segment_rejections (org_id, source_id, created_at)`,
  ],
};
