// Reading a Segment request: the write key of the Basic header, the body parsed whatever its content
// type (the browser SDK sends text/plain), and the client's address.
import type { Req } from '../../http/server.js';
import { jsonDepthExceeds } from '../../http/body.js';

const MAX_DEPTH = 64;

/** The write key of `Authorization: Basic base64(key + ':')`, or undefined. */
export function basicKey(authorization: string | undefined): string | undefined {
  if (!authorization || authorization.slice(0, 6).toLowerCase() !== 'basic ') return undefined;
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const key = colon === -1 ? decoded : decoded.slice(0, colon);
  return key || undefined;
}

export type Parsed = { ok: true; body: Record<string, unknown> } | { ok: false; message: string };

export function parse(raw: Buffer | null): Parsed {
  if (!raw || raw.length === 0) return { ok: false, message: 'request body is required' };
  if (jsonDepthExceeds(raw, MAX_DEPTH)) return { ok: false, message: `body is nested deeper than ${MAX_DEPTH} levels` };
  let v: unknown;
  try { v = JSON.parse(raw.toString('utf8')); } catch { return { ok: false, message: 'body is not valid JSON' }; }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, message: 'body must be a JSON object' };
  return { ok: true, body: v as Record<string, unknown> };
}

// The client SDKs' paths (browser and mobile): their calls get `context.ip` from the request when
// they carry none. Server libraries use the full names, and their address is the server's.
export const CLIENT_PATH = /^\/segment\/v1\/[itpsgab]\/?$/;

/** The first X-Forwarded-For address (behind a proxy), else the peer's address. */
export function clientIp(req: Req): string | undefined {
  const xff = req.headers['x-forwarded-for'];
  const first = xff ? xff.split(',')[0]!.trim() : '';
  return (first || req.remoteAddress || undefined)?.slice(0, 100);
}
