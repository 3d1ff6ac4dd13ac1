// One delivery attempt: a POST to a guarded address, never following redirects, bounded by one
// deadline that covers resolution, connection and the response head.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { bareHost, resolveTarget, type Address } from './guard.js';

export type Attempt =
  | { kind: 'response'; status: number; retryAfterMs?: number }
  /** Network failure or timeout: retried. */
  | { kind: 'error'; reason: string }
  /** The private-network guard refused the target: failed at once, no request made. */
  | { kind: 'refused'; reason: string };

export interface Agents { http: http.Agent; https: https.Agent }

/** Keep-alive agents; `maxFree` idle sockets per host (the sender's concurrency, so a busy
 * receiver's connections are reused rather than closed and opened again). */
export const newAgents = (maxFree: number): Agents => ({
  http: new http.Agent({ keepAlive: true, maxFreeSockets: maxFree, timeout: 30_000 }),
  https: new https.Agent({ keepAlive: true, maxFreeSockets: maxFree, timeout: 30_000 }),
});

export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  agents: Agents;
  signal?: AbortSignal;
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now. */
export function parseRetryAfter(v: string | undefined, nowMs = Date.now()): number | undefined {
  if (!v) return undefined;
  const t = v.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const at = Date.parse(t);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A `lookup` that answers only the addresses the guard checked. */
function pinned(addresses: Address[]): LookupFunction {
  return ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (opts?.all) cb(null, addresses);
    else cb(null, addresses[0]!.address, addresses[0]!.family);
  }) as unknown as LookupFunction;
}

const reasonOf = (err: unknown) => {
  const e = err as { code?: string; message?: string };
  return e.code && e.message && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : (e.message ?? String(err));
};

/** A user name or password as written: a stray `%` (not an escape) is kept, never a throw that
 * would leave the delivery unsent and uncounted. */
const decodeUserinfo = (v: string) => { try { return decodeURIComponent(v); } catch { return v; } };

export async function post(o: PostOptions): Promise<Attempt> {
  const started = Date.now();
  let u: URL;
  try { u = new URL(o.url); } catch { return { kind: 'refused', reason: 'the URL does not parse' }; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { kind: 'refused', reason: `${u.protocol} URLs are not allowed` };
  const host = bareHost(u.hostname);
  let dnsTimer: NodeJS.Timeout | undefined;
  const deadline = new Promise<Attempt>((resolve) => {
    dnsTimer = setTimeout(() => resolve({ kind: 'error', reason: `timed out after ${o.timeoutMs} ms` }), o.timeoutMs);
  });
  const target = await Promise.race([resolveTarget(host, o.allowPrivate), deadline]);
  clearTimeout(dnsTimer);
  if ('kind' in target) return target;
  if (!target.ok) return target.refused ? { kind: 'refused', reason: target.reason } : { kind: 'error', reason: target.reason };
  const remaining = o.timeoutMs - (Date.now() - started);
  if (remaining <= 0) return { kind: 'error', reason: `timed out after ${o.timeoutMs} ms` };

  const secure = u.protocol === 'https:';
  return new Promise<Attempt>((resolve) => {
    let settled = false;
    const finish = (a: Attempt) => { if (!settled) { settled = true; resolve(a); } };
    const req = (secure ? https : http).request({
      protocol: u.protocol, hostname: host, port: u.port || (secure ? 443 : 80), path: u.pathname + u.search, method: 'POST',
      headers: { ...o.headers, 'content-length': String(Buffer.byteLength(o.body)) },
      auth: u.username ? `${decodeUserinfo(u.username)}:${decodeUserinfo(u.password)}` : undefined,
      lookup: pinned(target.addresses),
      agent: secure ? o.agents.https : o.agents.http,
      signal: o.signal,
    });
    // One deadline for the whole exchange; a body that trickles is cut when it passes.
    const timer = setTimeout(() => {
      finish({ kind: 'error', reason: `timed out after ${o.timeoutMs} ms` });
      req.destroy(new Error('timed out'));
    }, remaining);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const ra = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after']) : undefined;
      finish(ra === undefined ? { kind: 'response', status } : { kind: 'response', status, retryAfterMs: ra });
      res.on('error', () => {});
      res.on('close', () => clearTimeout(timer));
      res.resume();
    });
    req.on('error', (err) => { clearTimeout(timer); finish({ kind: 'error', reason: reasonOf(err) }); });
    req.end(o.body);
  });
}
