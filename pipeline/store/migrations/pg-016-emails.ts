import type { Migration } from './types.js';

// Journey e-mail: the durable outbox. A row is the rendered message; its id gives the stable
// Message-ID header, so a resend after a crash is recognisable. Rows are `pending` (due at
// next_attempt_at) when the enqueueing process has an SMTP transport, `stored` (kept, never sent)
// when it has none; a sender claims due rows with FOR UPDATE SKIP LOCKED and a lease, sends outside any
// transaction and writes the outcome only while it still holds the lease.
export const pg016: Migration = {
  version: 16,
  name: 'emails',
  statements: [
    `CREATE TABLE emails (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      execution_id text,
      key text NOT NULL,
      template text NOT NULL CHECK (char_length(template) <= 64),
      to_address text NOT NULL,
      subject text NOT NULL,
      html text NOT NULL,
      text text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'stored')),
      attempts int NOT NULL DEFAULT 0,
      last_error text,
      next_attempt_at timestamptz,
      lease_until timestamptz,
      lease_token text,
      smtp_message_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      sent_at timestamptz,
      UNIQUE (org_id, key))`,
    // The claim scans due pending rows oldest first; lists are per org, newest first (ids sort by time).
    `CREATE INDEX emails_due ON emails (next_attempt_at) WHERE status = 'pending'`,
    `CREATE INDEX emails_list ON emails (org_id, id DESC)`,
  ],
};
