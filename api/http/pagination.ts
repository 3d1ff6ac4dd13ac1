import { HttpError } from './errors.js';

// Opaque cursors: base64url of the sort key of the last item returned.
export function encodeCursor(key: unknown): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor<T = unknown>(cursor: unknown): T | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    return JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8')) as T;
  } catch {
    throw new HttpError('validation_failed', 'query /cursor: is not a cursor returned by this list');
  }
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
