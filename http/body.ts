// Request-body helpers that run before anything recurses over the payload.

const OPEN_OBJ = 0x7b, OPEN_ARR = 0x5b, CLOSE_OBJ = 0x7d, CLOSE_ARR = 0x5d, QUOTE = 0x22, BACKSLASH = 0x5c;

export const SCAN_OK = 0, SCAN_DEEP = 1, SCAN_SUSPECT = 2;
const U = 0x75, ZERO = 0x30, D = 0x64, UPPER_D = 0x44;

/**
 * One pass over a JSON text before it is parsed: SCAN_DEEP when it nests deeper than `limit`
 * (stops there), else SCAN_SUSPECT when a string holds a `\u0000` or `\uD800`-`\uDFFF` escape
 * (a NUL or a surrogate, which the stores may refuse: schemas/storable.ts decides after parsing),
 * else SCAN_OK. Raw NUL bytes are invalid JSON and fail the parse.
 */
export function scanJson(buf: Uint8Array, limit: number): number {
  let depth = 0;
  let inStr = false;
  let suspect = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inStr) {
      if (c === BACKSLASH) {
        if (buf[i + 1] === U && !suspect) {
          const h = buf[i + 2];
          if (h === ZERO && buf[i + 3] === ZERO && buf[i + 4] === ZERO && buf[i + 5] === ZERO) suspect = true;
          else if (h === D || h === UPPER_D) {
            const h2 = buf[i + 3]! | 0x20; // lower case; digits keep their value
            if (h2 === 0x38 || h2 === 0x39 || (h2 >= 0x61 && h2 <= 0x66)) suspect = true; // 8 9 a-f
          }
        }
        i++;
      } else if (c === QUOTE) inStr = false;
    } else if (c === QUOTE) inStr = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) { if (++depth > limit) return SCAN_DEEP; }
    else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return suspect ? SCAN_SUSPECT : SCAN_OK;
}

/** Nesting depth of a JSON text deeper than `limit` (strings skipped). */
export const jsonDepthExceeds = (buf: Uint8Array, limit: number): boolean => scanJson(buf, limit) === SCAN_DEEP;

export function isJsonContentType(ct: string): boolean {
  if (ct === 'application/json') return true;
  const semi = ct.indexOf(';');
  const base = (semi === -1 ? ct : ct.slice(0, semi)).trim().toLowerCase();
  return base === 'application/json' || (base.startsWith('application/') && base.endsWith('+json'));
}

/** Parses a query string into first-value-wins members. */
export function parseQuery(qs: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!qs) return out;
  for (const [k, v] of new URLSearchParams(qs)) if (!(k in out)) out[k] = v;
  return out;
}
