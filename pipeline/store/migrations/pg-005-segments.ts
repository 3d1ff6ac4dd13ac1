import type { Migration } from './types.js';

export const pg005: Migration = {
  version: 5,
  name: 'segments, memberships, per-profile event history, event outbox',
  statements: [
    // Bumped (under the org's exclusive segment lock) by every segment create, update and delete;
    // ingestion reads it under the shared lock and reloads its definitions when it moved.
    `ALTER TABLE orgs ADD COLUMN segments_version bigint NOT NULL DEFAULT 0`,
    // Takes the orgs' shared segment locks, then reads their versions. VOLATILE: the read takes a
    // fresh snapshot after the locks were granted, so one round trip does both (a plain statement's
    // snapshot would predate a lock acquired inside it).
    `CREATE FUNCTION headwater_segment_versions(org_ids text[], lock_keys bigint[])
     RETURNS TABLE (org text, ver bigint) LANGUAGE plpgsql VOLATILE AS $fn$
     BEGIN
       PERFORM pg_advisory_xact_lock_shared(k) FROM unnest(lock_keys) AS k ORDER BY k;
       RETURN QUERY SELECT o.id, o.segments_version FROM orgs o WHERE o.id = ANY(org_ids);
     END $fn$`,
    `CREATE TABLE segments (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      name text NOT NULL,
      description text,
      definition jsonb NOT NULL,
      environments text[] NOT NULL,
      -- Bumped on every definition or environments change; a backfill page of an older version stops.
      version int NOT NULL DEFAULT 1,
      -- Set once membership over existing profiles is complete for this version; NULL: a backfill
      -- is due (the sweeper resumes one a crash interrupted).
      computed_at timestamptz,
      -- The sweep's position: windows were applied up to this instant.
      swept_at timestamptz NOT NULL,
      -- A backfill or sweep in progress holds the segment until then (several processes may sweep).
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL)`,
    `CREATE INDEX segments_org ON segments (org_id, id)`,
    // Backfills and previews walk an org's live profiles in id order.
    `CREATE INDEX profiles_org_live ON profiles (org_id, id) WHERE merged_into IS NULL`,
    `CREATE TABLE segment_members (
      segment_id text NOT NULL,
      org_id text NOT NULL,
      profile_id text NOT NULL,
      entered_at timestamptz NOT NULL,
      PRIMARY KEY (segment_id, profile_id))`,
    `CREATE INDEX segment_members_profile ON segment_members (profile_id)`,
    // One row per stored event of a profile, by event timestamp: what performed / notPerformed,
    // atLeast and withinDays count. Moves with merges. The (name, ts) index finds the profiles whose
    // events cross a window's edge for the sweep.
    `CREATE TABLE event_history (
      profile_id text NOT NULL,
      name text NOT NULL,
      ts timestamptz NOT NULL)`,
    `CREATE INDEX event_history_profile ON event_history (profile_id, name, ts)`,
    `CREATE INDEX event_history_name_ts ON event_history (name, ts)`,
    // Events of tracked calls stored before this step.
    `INSERT INTO event_history (profile_id, name, ts)
     SELECT COALESCE(p.merged_into, p.id), m.result->'event'->>'event', (m.result->'event'->>'timestamp')::timestamptz
     FROM messages m JOIN profiles p ON p.id = m.result->'event'->>'profileId'
     WHERE m.kind = 'track' AND m.result ? 'event'`,
    // System events (segment transitions) are written here in the transaction that caused them and
    // deleted once the event stream took them; a relay republishes rows a crash left behind.
    `CREATE TABLE event_outbox (
      id text PRIMARY KEY,
      -- The event as JSON text: written on hot paths, only ever read back whole.
      payload text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now())`,
  ],
};
