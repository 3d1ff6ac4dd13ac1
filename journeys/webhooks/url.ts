// A webhook URL's password (`https://user:pass@host/`) is a secret: it is split off before the URL
// is stored, kept encrypted, put back only for the request, and answers show it masked.
export const MASK = '***';

/** The URL without its password, and the password ('' when none). URLs without one are kept as
 * written (not normalized). */
export function splitPassword(url: string): { url: string; password: string } {
  let u: URL;
  try { u = new URL(url); } catch { return { url, password: '' }; }
  if (!u.password) return { url, password: '' };
  let password: string;
  try { password = decodeURIComponent(u.password); } catch { password = u.password; } // a stray % is literal
  u.password = '';
  return { url: u.toString(), password };
}

/** The URL to call: the stored one with its password put back. */
export function withPassword(url: string, password: string | null): string {
  if (!password) return url;
  const u = new URL(url);
  // The setter leaves `%` as is: encoded here so that reading it back decodes to the password.
  u.password = encodeURIComponent(password);
  return u.toString();
}

/** The URL as answers show it: a password, stored apart or still inline (rows written before it
 * was split off), becomes `***`. */
export function maskPassword(url: string, hasStoredPassword: boolean): string {
  let u: URL;
  try { u = new URL(url); } catch { return url; }
  if (!hasStoredPassword && !u.password) return url;
  u.password = MASK;
  return u.toString();
}
