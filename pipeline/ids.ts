import { randomBytes } from 'node:crypto';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** Prefixed, time-sortable id (ULID layout, lowercase Crockford base32): `app_01j...`. */
export function newId(prefix: string, now = Date.now()): string {
  let out = '';
  let t = now;
  const time: string[] = [];
  for (let i = 0; i < 10; i++) { time.push(B32[t % 32]!); t = Math.floor(t / 32); }
  out = time.reverse().join('');
  const rnd = randomBytes(10);
  // 80 random bits -> 16 base32 characters.
  let acc = 0n;
  for (const b of rnd) acc = (acc << 8n) | BigInt(b);
  let r = '';
  for (let i = 0; i < 16; i++) { r = B32[Number(acc & 31n)]! + r; acc >>= 5n; }
  return `${prefix}_${out}${r}`;
}

/** A random secret token with a scheme prefix: `hwk_<43 base64url chars>` (256 bits). */
export function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}
