import type { Migration } from './types.js';

// Journey controls (docs/authoring.md, "Controls").
// `executions`: why an execution ended early (`exit_reason`), its conversion on the journey's goal,
// whether it was held out, and the variants `ctx.split` chose. `executions_profile` (org, profile)
// already serves exits and goals: both look up a profile's executions when its event lands.
// `journey_counters`: per journey and hour, triggers the throttle skipped and marketing e-mails the
// frequency cap refused, counted where they happen (no scan needed to report them).
// `journey_throttle`: the executions a throttled journey started in its current fixed window, one
// row per journey locked by the inserting transaction, so every process shares one count.
// `journey_debounce`: a debounced journey's pending start per profile: the latest trigger event and
// when it is due; due rows are claimed with SKIP LOCKED by any process's runner.
// `marketing_sends`: the marketing e-mails sent per profile, which the frequency cap counts (keyed by
// the send's idempotency key, so a repeated activation is not counted twice).
export const pg023: Migration = {
  version: 23,
  name: 'journey controls',
  statements: [
    `ALTER TABLE executions ADD COLUMN exit_reason text`,
    `ALTER TABLE executions ADD COLUMN converted boolean NOT NULL DEFAULT false`,
    `ALTER TABLE executions ADD COLUMN converted_at timestamptz`,
    `ALTER TABLE executions ADD COLUMN holdout boolean NOT NULL DEFAULT false`,
    `ALTER TABLE executions ADD COLUMN variants jsonb NOT NULL DEFAULT '{}'::jsonb`,
    `CREATE TABLE journey_counters (
      org_id text NOT NULL,
      journey_key text NOT NULL,
      hour timestamptz NOT NULL,
      throttled bigint NOT NULL DEFAULT 0,
      capped bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (org_id, journey_key, hour))`,
    `CREATE TABLE journey_throttle (
      org_id text NOT NULL,
      journey_key text NOT NULL,
      window_start timestamptz NOT NULL,
      started int NOT NULL,
      PRIMARY KEY (org_id, journey_key))`,
    `CREATE TABLE journey_debounce (
      org_id text NOT NULL,
      journey_key text NOT NULL,
      profile_id text NOT NULL,
      event jsonb NOT NULL,
      due_at timestamptz NOT NULL,
      PRIMARY KEY (org_id, journey_key, profile_id))`,
    `CREATE INDEX journey_debounce_due ON journey_debounce (due_at)`,
    `CREATE TABLE marketing_sends (
      org_id text NOT NULL,
      profile_id text NOT NULL,
      key text NOT NULL,
      sent_at timestamptz NOT NULL,
      PRIMARY KEY (org_id, key))`,
    `CREATE INDEX marketing_sends_profile ON marketing_sends (org_id, profile_id, sent_at)`,
  ],
};
