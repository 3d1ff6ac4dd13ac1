import type { Migration } from './types.js';

// Track calls the pipeline held or refused, counted per org and minute by the front ends that
// answered them (pipeline/stats/outcomes.ts): accepted events are in ClickHouse, but a quarantined,
// denied or rejected call leaves no row of its own anywhere (a refusal writes nothing), and the
// dashboard's events chart (GET /v1/stats/events) shows all four. The overview's failure rates
// count an org's e-mails and webhook deliveries of the last day: by (org, created_at), not by
// scanning every org's rows. A journey's metrics (GET /v1/journeys/{key}/metrics) count the
// executions that started, and that ended, in a window: one index range each.
export const pg022: Migration = {
  version: 22,
  name: 'dashboard stats: ingest outcomes, stats indexes',
  statements: [
    `CREATE TABLE ingest_outcomes (
      org_id text NOT NULL,
      minute timestamptz NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('quarantined', 'denied', 'rejected')),
      count bigint NOT NULL,
      PRIMARY KEY (org_id, minute, outcome))`,
    `CREATE INDEX emails_org_created ON emails (org_id, created_at)`,
    `CREATE INDEX webhook_deliveries_org_created ON webhook_deliveries (org_id, created_at)`,
    `CREATE INDEX executions_journey_started ON executions (org_id, journey_key, started_at)`,
    `CREATE INDEX executions_journey_ended ON executions (org_id, journey_key, ended_at) INCLUDE (status) WHERE ended_at IS NOT NULL`,
  ],
};
