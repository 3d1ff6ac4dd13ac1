// Standard Webhooks signing: `whsec_` + base64 secrets and `v1,` + base64 HMAC-SHA256 signatures
// over `id.timestamp.body`, keyed by the base64-decoded bytes after `whsec_`.
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret: 32 random bytes (the convention asks for 24 to 64). */
export const newSigningSecret = (): string => PREFIX + randomBytes(32).toString('base64');

/** The HMAC key of a secret, decoded once per claim rather than per attempt. */
export const signingKey = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/** The `webhook-signature` header value. */
export function sign(key: Buffer, id: string, timestamp: number, body: string): string {
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
}
