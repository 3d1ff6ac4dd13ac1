import type { Migration } from './types.js';

// Claims that are fair across orgs: the journey runner and both outbox senders look at each org's
// oldest due rows (one index probe per org) instead of the oldest due rows overall, so one org's
// backlog cannot hide another org's work from a claim. Numbered 19: 18 is taken by a webhook
// change developed in parallel.
export const pg019: Migration = {
  version: 19,
  name: 'fair claims',
  statements: [
    `CREATE INDEX executions_due_org ON executions (org_id, wake_at) WHERE status IN ('running', 'waiting')`,
    `CREATE INDEX webhook_deliveries_due_org ON webhook_deliveries (org_id, next_attempt_at) WHERE status = 'pending'`,
    `CREATE INDEX emails_due_org ON emails (org_id, next_attempt_at) WHERE status = 'pending'`,
  ],
};
