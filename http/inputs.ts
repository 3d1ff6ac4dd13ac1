// Strings of a request that no store can hold (schemas/storable.ts) are refused here, before
// validation and before any handler: 422 `validation_failed` naming the path parameter, query
// parameter or body member. A route whose body carries items judged one by one (a batch) gets the
// refused items back instead, so the rest of its items still go through.
import { unstorable, unstorableString } from '../schemas/storable.js';
import { HttpError } from './errors.js';

const refuse = (where: string, pointer: string, reason: string) =>
  new HttpError('validation_failed', `${where}${pointer}: ${reason}`);

/** Path and query parameters (already percent-decoded): `%00` arrives here as a NUL. */
export function checkParams(params: Record<string, string>, query: Record<string, unknown>): void {
  for (const k in params) {
    const why = unstorableString(params[k]!);
    if (why) throw refuse('path ', `/${k}`, why);
  }
  for (const k in query) {
    const v = query[k];
    const why = unstorableString(k) ?? (typeof v === 'string' ? unstorableString(v) : null);
    if (why) throw refuse('query ', `/${k.replace(/[\u0000\ud800-\udfff]/g, '\ufffd')}`, why);
  }
}

/**
 * A parsed body in which the byte scan saw a NUL or surrogate escape. With `items` (the JSON
 * pointer of an array, e.g. `/data/calls`), members of that array are judged one by one and the
 * refused ones returned by index with their message; anything else unstorable refuses the request.
 */
export function checkBody(body: Record<string, unknown>, items?: string): Map<number, string> | undefined {
  const path = items ? items.split('/').slice(1) : [];
  let parent: any = body;
  for (const seg of path.slice(0, -1)) parent = parent?.[seg];
  const last = path[path.length - 1];
  const list = last !== undefined && parent && typeof parent === 'object' ? parent[last] : undefined;
  if (!Array.isArray(list)) {
    const bad = unstorable(body);
    if (bad) throw refuse('body ', bad.pointer, bad.reason);
    return undefined;
  }
  // The rest of the body first, with the items left out.
  parent[last!] = [];
  const rest = unstorable(body);
  parent[last!] = list;
  if (rest) throw refuse('body ', rest.pointer, rest.reason);
  const refused = new Map<number, string>();
  for (let i = 0; i < list.length; i++) {
    const bad = unstorable(list[i], `${items}/${i}`);
    if (bad) refused.set(i, `body ${bad.pointer}: ${bad.reason}`);
  }
  return refused;
}
