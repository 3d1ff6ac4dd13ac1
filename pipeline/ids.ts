import { randomBytes, randomUUID } from 'node:crypto';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** Prefixed, time-sortable id (ULID layout, lowercase Crockford base32): `app_01j...`. */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) { time = B32[t % 32]! + time; t = Math.floor(t / 32); }
  // 80 random bits -> 16 base32 characters. randomUUID draws from Node's pooled CSPRNG buffer (one
  // system call per many ids; ids are minted per event on the hot path); its 20 hex characters
  // outside the version and variant nibbles are uniformly random.
  const u = randomUUID();
  const hex = u.slice(0, 8) + u.slice(9, 13) + u.slice(24, 32);
  let r = '';
  for (let j = 0; j < 20; j += 5) {
    const n = parseInt(hex.slice(j, j + 5), 16);
    r += B32[(n >>> 15) & 31]! + B32[(n >>> 10) & 31]! + B32[(n >>> 5) & 31]! + B32[n & 31]!;
  }
  return `${prefix}_${time}${r}`;
}

/** A random secret token with a scheme prefix: `hwk_<43 base64url chars>` (256 bits). */
export function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}
