import type { Migration } from './types.js';

export const pg006: Migration = {
  version: 6,
  name: 'event landing checkpoint',
  statements: [
    // Embedded mode answers a track call once Postgres committed it, before its event is in
    // ClickHouse (pipeline/landing.ts). Every event stored in `messages` at or after
    // `landed_before` may still be missing there; a start lands those again.
    `CREATE TABLE event_landing (
      id smallint PRIMARY KEY CHECK (id = 1),
      landed_before timestamptz NOT NULL)`,
    // Block-range index: nearly free to keep up on an append-ordered column, and enough to find the
    // recent rows. (Summarized by landing.ts: embedded Postgres runs no autovacuum.)
    `CREATE INDEX messages_created_brin ON messages USING brin (created_at)`,
  ],
};
