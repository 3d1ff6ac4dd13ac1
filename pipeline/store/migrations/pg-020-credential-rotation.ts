import type { Migration } from './types.js';

// Credential rotation, session revocation and push authorship (README "Credentials: rotation, revocation, push authors").
// `credentials.revoked_at` (from pg-001) becomes "stops working at": a rotation sets it to the end
// of the grace period. `orgs.sessions_revoked_before`: built-in sessions issued before it answer
// 401. `login_links_used`: a dashboard login link is exchanged once. Pushes record the credential
// kind and the session's role beside `created_by`.
export const pg020: Migration = {
  version: 20,
  name: 'credential rotation, session revocation, push authors',
  statements: [
    `ALTER TABLE orgs ADD COLUMN sessions_revoked_before timestamptz`,
    `CREATE INDEX credentials_org_kind ON credentials (org_id, kind)`,
    `CREATE TABLE login_links_used (
      jti text PRIMARY KEY,
      expires_at timestamptz NOT NULL)`,
    `ALTER TABLE pushes ADD COLUMN created_by_scheme text`,
    `ALTER TABLE pushes ADD COLUMN created_by_role text`,
  ],
};
