import type { Migration } from './types.js';

// The password of a webhook URL (`https://user:pass@host/`) is a secret: kept encrypted beside the
// URL (which keeps the user name and loses the password), like the signing secret, and never shown.
export const pg018: Migration = {
  version: 18,
  name: 'webhook url password',
  statements: [
    `ALTER TABLE webhooks ADD COLUMN url_password_enc text`,
  ],
};
