// What the stores can hold, checked in one place before any statement sees a value. Postgres `text`
// and `jsonb` refuse the NUL character, and `jsonb` refuses a lone UTF-16 surrogate (JSON.stringify
// writes it as a `\udXXX` escape that no code point matches). Every string of a request (path
// segment, query parameter, body member name or value, at any depth) passes through `unstorable`;
// integers are bounded by each schema's `maximum` (schemas/build.ts refuses a request integer
// without one) and date-times by the year range the event store holds.

/** Date-times accepted on input: ClickHouse DateTime64 holds 1900-01-01 to 2299-12-31. */
export const DATE_TIME_MIN = '1900-01-01T00:00:00Z';
export const DATE_TIME_MAX = '2299-12-31T23:59:59.999Z';

const SUSPECT = /[\u0000\ud800-\udfff]/;

/** Why a string cannot be stored, or null when it can. */
export function unstorableString(s: string): string | null {
  if (!SUSPECT.test(s)) return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return 'must not contain the NUL character (U+0000)';
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) { i++; continue; }
      return 'must not contain a lone UTF-16 surrogate';
    }
    if (c >= 0xdc00 && c <= 0xdfff) return 'must not contain a lone UTF-16 surrogate';
  }
  return null;
}

const escapePointer = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

export interface Unstorable { pointer: string; reason: string }

/**
 * The first member name or string value under `value` that no store can hold, with its JSON
 * pointer (relative to `at`), or null. Iterative: bodies are depth-checked before, but a walk must
 * not recurse on the stack anyway.
 */
export function unstorable(value: unknown, at = ''): Unstorable | null {
  const stack: Array<[unknown, string]> = [[value, at]];
  while (stack.length) {
    const [v, p] = stack.pop()!;
    if (typeof v === 'string') {
      const why = unstorableString(v);
      if (why) return { pointer: p, reason: why };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${p}/${i}`]);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        const why = unstorableString(k);
        if (why) return { pointer: `${p}/${escapePointer(k.replace(/[\u0000\ud800-\udfff]/g, '\ufffd'))}`, reason: `member name ${why}` };
        stack.push([(v as Record<string, unknown>)[k], `${p}/${escapePointer(k)}`]);
      }
    }
  }
  return null;
}
