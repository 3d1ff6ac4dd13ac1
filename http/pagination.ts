import { HttpError } from './errors.js';

// Opaque cursors: base64url of the sort key of the last item returned.
export function encodeCursor(key: unknown): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

const BAD_CURSOR = () => new HttpError('validation_failed', 'query /cursor: is not a cursor returned by this list');

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isStringPair = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && isString(v[0]) && isString(v[1]);

/** Decodes a cursor and checks its shape: a forged cursor is 422, never a silently empty page. */
export function decodeCursor<T>(cursor: unknown, is: (v: unknown) => v is T): T | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  let v: unknown;
  try { v = JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8')); } catch { throw BAD_CURSOR(); }
  if (!is(v)) throw BAD_CURSOR();
  return v;
}

/** Callers fetch `limit + 1` rows; this trims to `limit` and fills `meta`. */
export function page<R, O>(rows: R[], limit: number, keyOf: (r: R) => unknown, map: (r: R) => O) {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return {
    data: items.map(map),
    meta: { hasMore, nextCursor: hasMore ? encodeCursor(keyOf(items[items.length - 1]!)) : null },
  };
}

/** Escapes LIKE wildcards so `q` matches as a plain substring. */
export const likeSubstring = (q: string) => `%${q.replace(/[\\%_]/g, (c) => '\\' + c)}%`;
