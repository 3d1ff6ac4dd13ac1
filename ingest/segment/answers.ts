// Segment-style answers (`{ success, code, message }`) and the CORS headers every answer carries.
import type { Reply } from '../../http/server.js';

export type Cors = (origin: string | undefined) => Record<string, string>;

/** `origins`: '*' (any) or a comma-separated list. The request's origin is echoed when allowed. */
export function corsPolicy(origins: string): Cors {
  const any = origins.trim() === '*';
  const allowed = new Set(origins.split(',').map((o) => o.trim()).filter(Boolean));
  const ANY: Record<string, string> = { 'access-control-allow-origin': '*' };
  const NONE: Record<string, string> = {};
  return (origin) => {
    if (!origin) return any ? ANY : NONE;
    if (any || allowed.has(origin)) return { 'access-control-allow-origin': origin, vary: 'Origin' };
    return NONE;
  };
}

export const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type',
  'access-control-max-age': '86400',
};

const OK = JSON.stringify({ success: true });

export const accepted = (headers: Record<string, string>): Reply => ({ status: 200, raw: OK, contentType: 'application/json', headers });

export const refused = (status: number, code: string, message: string, headers: Record<string, string>): Reply =>
  ({ status, raw: JSON.stringify({ success: false, code, message }), contentType: 'application/json', headers });
