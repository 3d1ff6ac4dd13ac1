import type { Migration } from './types.js';

// Journey executions. One row per (journey, trigger event): the unique key makes a redelivered
// trigger a no-op, and the partial unique index keeps at most one running or waiting execution per
// (journey, profile). `journal` is the current run's entries; `wait` the registered sleep or
// waitForEvent (with `began`, the activation start it counts events from); `wake_value` the event
// that answered it; `wake_at` when the runner should activate it next (the timer store: claims take
// due rows with SKIP LOCKED and a lease). `inbox` collects the profile's events that arrive while an
// activation holds the lease, so a wait registered at its end still sees them.
// `orgs.journeys_version` moves whenever what triggers journeys may have changed (enable, disable,
// a new ready version): the per-org trigger index reloads only then.
export const pg015: Migration = {
  version: 15,
  name: 'executions',
  statements: [
    `ALTER TABLE orgs ADD COLUMN journeys_version bigint NOT NULL DEFAULT 0`,
    `CREATE TABLE executions (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      journey_key text NOT NULL,
      version_id text NOT NULL,
      release_id text NOT NULL,
      app_id text NOT NULL,
      source_id text NOT NULL,
      profile_id text NOT NULL,
      environment text NOT NULL,
      trigger_event_id text NOT NULL,
      run_id text NOT NULL,
      run_seq int NOT NULL DEFAULT 0,
      event jsonb NOT NULL,
      status text NOT NULL,
      step text,
      timer_deadline timestamptz,
      journal jsonb NOT NULL DEFAULT '[]'::jsonb,
      journal_entries int NOT NULL DEFAULT 0,
      wait jsonb,
      wake_value jsonb,
      wake_at timestamptz,
      lease_until timestamptz,
      lease_id text,
      attempts int NOT NULL DEFAULT 0,
      inbox jsonb NOT NULL DEFAULT '[]'::jsonb,
      error text,
      started_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      ended_at timestamptz,
      UNIQUE (org_id, journey_key, trigger_event_id))`,
    `CREATE UNIQUE INDEX executions_one_active ON executions (org_id, journey_key, profile_id) WHERE status IN ('running', 'waiting')`,
    `CREATE INDEX executions_due ON executions (wake_at) WHERE status IN ('running', 'waiting')`,
    `CREATE INDEX executions_profile_active ON executions (org_id, profile_id) WHERE status IN ('running', 'waiting')`,
    `CREATE INDEX executions_org ON executions (org_id, id DESC)`,
    `CREATE INDEX executions_entered ON executions (org_id, journey_key, profile_id, started_at DESC)`,
    `CREATE TABLE execution_logs (
      execution_id text NOT NULL,
      run_seq int NOT NULL,
      seq int NOT NULL,
      level text NOT NULL,
      message text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (execution_id, run_seq, seq))`,
  ],
};
