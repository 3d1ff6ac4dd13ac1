import { randomBytes, randomUUID } from 'node:crypto';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';
/** Hex digit value by character code (randomUUID's lowercase hex). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 16; i++) HEX['0123456789abcdef'.charCodeAt(i)] = i;

/** Four base32 characters of a 20-bit number. */
const quad = (n: number) => B32[(n >>> 15) & 31]! + B32[(n >>> 10) & 31]! + B32[(n >>> 5) & 31]! + B32[n & 31]!;

/** The hex digits of `u` at five positions, as a 20-bit number. */
const five = (u: string, a: number, b: number, c: number, d: number, e: number) =>
  (HEX[u.charCodeAt(a)]! << 16) | (HEX[u.charCodeAt(b)]! << 12) | (HEX[u.charCodeAt(c)]! << 8) | (HEX[u.charCodeAt(d)]! << 4) | HEX[u.charCodeAt(e)]!;

/**
 * Prefixed, time-sortable id (ULID layout, lowercase Crockford base32): `app_01j...`: 10 characters
 * of milliseconds, then 16 of 80 random bits. Minted per event on the hot path, so built without
 * intermediate strings or parsing: randomUUID draws from Node's pooled CSPRNG buffer (one system
 * call per many ids), and its 20 hex digits outside the version and variant nibbles are uniformly
 * random.
 */
export function newId(prefix: string, now = Date.now()): string {
  // 50 bits of time: the top 20 and the low 30 (bit operations are 32-bit).
  const hi = Math.floor(now / 0x40000000);
  const lo = now - hi * 0x40000000;
  const time = quad(hi) + B32[(lo >>> 25) & 31]! + B32[(lo >>> 20) & 31]! + quad(lo & 0xfffff);
  // A v4 UUID's hex digits 0-7, 9-12 and 24-31 are random (8 and 13 are dashes, 14 the version,
  // 19 the variant).
  const u = randomUUID();
  return `${prefix}_${time}${quad(five(u, 0, 1, 2, 3, 4))}${quad(five(u, 5, 6, 7, 9, 10))}${quad(five(u, 11, 12, 24, 25, 26))}${quad(five(u, 27, 28, 29, 30, 31))}`;
}

/** A random secret token with a scheme prefix: `hwk_<43 base64url chars>` (256 bits). */
export function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}
