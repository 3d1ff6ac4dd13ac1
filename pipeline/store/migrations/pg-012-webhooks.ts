import type { Migration } from './types.js';

// Outbound webhooks: the registry and the durable delivery outbox. A delivery row is the message:
// its id is the `webhook-id` the receiver sees on every attempt and `body` the exact bytes sent.
// A process claims due rows with FOR UPDATE SKIP LOCKED and a lease (lease_until + lease_token),
// sends outside any transaction, and writes the outcome only if it still holds the lease.
export const pg012: Migration = {
  version: 12,
  name: 'webhooks',
  statements: [
    `CREATE TABLE webhooks (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      name text NOT NULL,
      url text NOT NULL,
      secret_enc text NOT NULL,
      payload_version int NOT NULL DEFAULT 1,
      disabled_at timestamptz,
      consecutive_failures int NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (org_id, name))`,
    `CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      execution_id text,
      key text,
      type text NOT NULL,
      body text NOT NULL,
      status text NOT NULL,
      attempts int NOT NULL DEFAULT 0,
      last_status_code int,
      last_error text,
      next_attempt_at timestamptz,
      lease_until timestamptz,
      lease_token text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`,
    // A repeated journey activation enqueues once: (org, key) is unique when a key is given.
    `CREATE UNIQUE INDEX webhook_deliveries_key ON webhook_deliveries (org_id, key) WHERE key IS NOT NULL`,
    `CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, id)`,
    `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
  ],
};
