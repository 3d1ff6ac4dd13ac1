// Request-body helpers that run before anything recurses over the payload.

const OPEN_OBJ = 0x7b, OPEN_ARR = 0x5b, CLOSE_OBJ = 0x7d, CLOSE_ARR = 0x5d, QUOTE = 0x22, BACKSLASH = 0x5c;

/** Nesting depth of a JSON text, scanned byte by byte (strings skipped). Stops early past `limit`. */
export function jsonDepthExceeds(buf: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inStr) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inStr = false;
    } else if (c === QUOTE) inStr = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) { if (++depth > limit) return true; }
    else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return false;
}

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
