// Bearer authentication for every scheme and the answers of the OpenAPI description, "Authentication".
import { SignJWT, jwtVerify, decodeJwt, createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import type { Scheme } from '../../schemas/route.js';
import { HttpError } from '../../http/errors.js';
import type { Principal, RouteSpec } from '../../http/server.js';
import { hashToken, type Secrets } from '../../pipeline/secrets.js';
import { AuthFailures } from './failures.js';
import { newId } from '../../pipeline/ids.js';
import { deployKeyMayCall } from '../../schemas/scope.js';

export type Role = 'org:admin' | 'org:member';
export type KeyScheme = 'apiKey' | 'deployKey' | 'pipelineKey';

/** Token prefixes of org keys; the prefix tells the scheme before any lookup. */
export const KEY_PREFIX: Record<KeyScheme, string> = { apiKey: 'hwk', deployKey: 'hwd', pipelineKey: 'hwp' };
const PREFIX_SCHEME = new Map<string, KeyScheme>(Object.entries(KEY_PREFIX).map(([s, p]) => [p, s as KeyScheme]));

const BUILTIN_ISSUER = 'headwater';
/** How long a process trusts a cached key or an org's session cut-off before reading the database
 * again: the bound within which a rotation or a revocation made by another process takes effect
 * (the process that made it applies it at once). One indexed read per key and org per 5 s. */
export const RECHECK_MS = 5_000;
const NEGATIVE_TTL_MS = 2_000;
// Known keys and unknown ones live in separate tables: a flood of random keys fills only the
// (smaller) negative one and can never push a valid key out.
const POSITIVE_MAX = 100_000;
const NEGATIVE_MAX = 20_000;
/** Dashboard login links live minutes: long enough to click, short enough that a leaked one is dead. */
export const LOGIN_LINK_TTL_SECONDS = 300;

/** A known key; `expiresAt`: when it stops working (the end of a rotation's grace period), else Infinity. */
interface KnownKey { principal: Principal; expiresAt: number }

export interface AuthOptions {
  pool: pg.Pool;
  secrets: Secrets;
  sessionTtlSeconds: number;
  external?: { issuer: string; jwksUrl: string; orgClaim: string; roleClaim: string; audience?: string };
  /** Failed authentications a client address may have per minute before 429 (0: unlimited). */
  failureLimit: number;
}

export interface Auth {
  /** `address` reads the client's address (failed attempts are limited per address); called only before returning. */
  authenticate(authorization: string, route: RouteSpec, address: () => string): Principal | Promise<Principal>;
  issueSession(orgId: string, role: Role, userId?: string | null): Promise<{ token: string; role: Role; expiresAt: string; userId: string }>;
  /** Puts a freshly created key in the cache so it works at once on this node. */
  remember(token: string, principal: Principal): void;
  /** Tells this process's cache that the keys with these hashes stop working at `at`. */
  expireKeys(hashes: string[], at: Date): void;
  /** Tells this process's cache the org's session cut-off (sessions issued before it answer 401). */
  sessionsRevoked(orgId: string, before: Date): void;
  /** A short-lived, single-use token that `exchangeLoginLink` turns into a session. */
  issueLoginLink(orgId: string, role: Role, userId?: string | null): Promise<{ loginToken: string; role: Role; expiresAt: string }>;
  exchangeLoginLink(loginToken: string): Promise<{ token: string; role: Role; expiresAt: string; userId: string }>;
  close(): void;
}

const invalid = (msg = 'missing or invalid credential') => new HttpError('invalid_key', msg);

export function createAuth(opts: AuthOptions): Auth {
  const known = new LRUCache<string, KnownKey>({ max: POSITIVE_MAX, ttl: RECHECK_MS });
  const unknown = new LRUCache<string, true>({ max: NEGATIVE_MAX, ttl: NEGATIVE_TTL_MS });
  const failures = new AuthFailures(opts.failureLimit);
  const jwks: JWTVerifyGetKey | undefined = opts.external ? createRemoteJWKSet(new URL(opts.external.jwksUrl)) : undefined;

  /** A failed credential: counted against its address, then 401. */
  const failed = (address: string, msg?: string) => { failures.record(address); return invalid(msg); };
  const limited = (retryAfter: number) =>
    new HttpError('rate_limited', 'too many failed authentications from this address', { 'retry-after': String(retryAfter) });

  const cutOffs = new LRUCache<string, { before: number | null }>({ max: POSITIVE_MAX, ttl: RECHECK_MS });

  // A rotated key keeps working until `revoked_at` (its grace period), then never again.
  const lookupKey = async (hash: string, scheme: KeyScheme): Promise<Principal | null> => {
    const r = await opts.pool.query(
      'SELECT org_id, kind, revoked_at FROM credentials WHERE hash = $1 AND (revoked_at IS NULL OR revoked_at > now())', [hash]);
    const row = r.rows[0];
    const p: Principal | null = row && row.kind === scheme ? { scheme, orgId: row.org_id, role: null, userId: null, keyId: hash.slice(0, 24) } : null;
    if (p) known.set(hash, { principal: p, expiresAt: row.revoked_at ? new Date(row.revoked_at).getTime() : Infinity });
    else unknown.set(hash, true);
    return p;
  };

  /** The org's session cut-off in epoch ms (null: none), re-read at most every RECHECK_MS. */
  const cutOff = async (orgId: string): Promise<number | null> => {
    const hit = cutOffs.get(orgId);
    if (hit) return hit.before;
    const r = await opts.pool.query('SELECT sessions_revoked_before FROM orgs WHERE id = $1', [orgId]);
    const v = r.rows[0]?.sessions_revoked_before;
    const before = v ? new Date(v).getTime() : null;
    cutOffs.set(orgId, { before });
    return before;
  };

  // Built-in tokens carry `iat_ms` so that a session minted in the same second as a revocation, just
  // after it, is not refused with it (`iat` has whole seconds only). One minted in the cut-off's own
  // millisecond is (it may have come before the revocation; the revoke route answers only once the
  // clock has passed the cut-off, so nothing minted after its answer is refused).
  const issuedBeforeCutOff = async (payload: Record<string, unknown>): Promise<boolean> => {
    if (typeof payload.org !== 'string') return false;
    const before = await cutOff(payload.org);
    if (before === null) return false;
    const at = typeof payload.iat_ms === 'number' ? payload.iat_ms : typeof payload.iat === 'number' ? payload.iat * 1000 : 0;
    return at <= before;
  };

  const verifySession = async (token: string): Promise<Principal> => {
    let iss: string | undefined;
    try { iss = decodeJwt(token).iss; } catch { throw invalid(); }
    try {
      if (iss === BUILTIN_ISSUER) {
        const { payload } = await jwtVerify(token, opts.secrets.jwtKey, { issuer: BUILTIN_ISSUER, algorithms: ['HS256'] });
        // A login link is not a session: it only buys one through the exchange route.
        if (payload.use !== undefined) throw invalid('a login link is not a session token');
        if (await issuedBeforeCutOff(payload)) throw invalid('session token was revoked');
        return sessionPrincipal(payload.org, payload.role, payload.sub);
      }
      if (opts.external && jwks && iss === opts.external.issuer) {
        // With an audience configured, a token without it (or for another audience) is refused.
        const { payload } = await jwtVerify(token, jwks, { issuer: opts.external.issuer, audience: opts.external.audience });
        return sessionPrincipal(payload[opts.external.orgClaim], payload[opts.external.roleClaim], payload.sub);
      }
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw invalid('session token is invalid or expired');
    }
    throw invalid('session token issuer is not trusted');
  };

  // Scope rules (OpenAPI description, "Authentication"): a deploy key outside its routes is 403 deploy_key_scope; any other
  // credential of the wrong scheme is 401; a member on an admin mutation is 403 forbidden.
  // The deploy key's routes are the table of schemas/scope.ts, not whatever a route's `auth` says.
  const admit = (p: Principal, route: RouteSpec): Principal => {
    if (p.scheme === 'deployKey' && !route.auth.includes('operator') && !deployKeyMayCall(route.method, route.path)) {
      throw new HttpError('deploy_key_scope', 'the deploy key is valid only for the release lifecycle');
    }
    if (!route.auth.includes(p.scheme)) throw invalid('this credential is not accepted on this route');
    if (route.admin && p.scheme === 'session' && p.role !== 'org:admin') throw new HttpError('forbidden', 'this action requires the org:admin role');
    return p;
  };

  const OPERATOR: Principal = Object.freeze({ scheme: 'operator' as Scheme, orgId: null, role: null, userId: null });

  return {
    authenticate(authorization, route, address) {
      if (!authorization || authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ') throw invalid();
      const token = authorization.slice(7).trim();
      if (!token) throw invalid();
      // The operator token is whatever the operator configured (any prefix): compared first, in
      // constant time once its length matches, so that no key prefix can shadow it.
      if (opts.secrets.isOperator(token)) return admit(OPERATOR, route);
      const us = token.indexOf('_');
      const prefix = us > 0 ? token.slice(0, us) : '';
      const keyScheme = PREFIX_SCHEME.get(prefix);
      if (keyScheme) {
        const hash = hashToken(token);
        const hit = known.get(hash);
        if (hit) {
          if (hit.expiresAt <= Date.now()) throw invalid();
          return admit(hit.principal, route);
        }
        if (unknown.has(hash)) throw invalid(); // answered from memory: costs nothing to count
        // Only a key that would cost a query is held back: cached keys and sessions still work.
        const from = address();
        const wait = failures.retryAfter(from);
        if (wait > 0) throw limited(wait);
        return lookupKey(hash, keyScheme).then((p) => { if (!p) throw failed(from); return admit(p, route); });
      }
      if (token.split('.').length === 3) {
        const from = address();
        return verifySession(token).then((p) => admit(p, route), (err) => {
          if (!(err instanceof HttpError) || err.code !== 'invalid_key') throw err;
          failures.record(from);
          const wait = failures.retryAfter(from);
          throw wait > 0 ? limited(wait) : err;
        });
      }
      throw invalid();
    },
    issueSession: (orgId, role, userId) => sign({ orgId, role, uid: userId ?? newId('usr') }, opts.sessionTtlSeconds),
    async issueLoginLink(orgId, role, userId) {
      const s = await sign({ orgId, role, uid: userId ?? newId('usr') }, LOGIN_LINK_TTL_SECONDS, { use: 'login', jti: newId('lnk') });
      return { loginToken: s.token, role, expiresAt: s.expiresAt };
    },
    async exchangeLoginLink(loginToken) {
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(loginToken, opts.secrets.jwtKey, { issuer: BUILTIN_ISSUER, algorithms: ['HS256'] }));
      } catch { throw invalid('login link is invalid or expired'); }
      if (payload.use !== 'login' || typeof payload.jti !== 'string' || typeof payload.exp !== 'number') throw invalid('not a login link');
      if (await issuedBeforeCutOff(payload)) throw invalid('login link was revoked');
      const p = sessionPrincipal(payload.org, payload.role, payload.sub);
      // Single use: the first exchange wins; a replay of the same link (history, a proxy log) is 401.
      await opts.pool.query('DELETE FROM login_links_used WHERE expires_at < now()');
      const used = await opts.pool.query(
        'INSERT INTO login_links_used (jti, expires_at) VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING', [payload.jti, payload.exp]);
      if (used.rowCount !== 1) throw invalid('login link was already used');
      return sign({ orgId: p.orgId!, role: p.role!, uid: p.userId! }, opts.sessionTtlSeconds);
    },
    remember(token, principal) {
      const h = hashToken(token);
      unknown.delete(h);
      known.set(h, { principal: { ...principal, keyId: h.slice(0, 24) }, expiresAt: Infinity });
    },
    expireKeys(hashes, at) {
      for (const h of hashes) { const e = known.get(h); if (e) e.expiresAt = Math.min(e.expiresAt, at.getTime()); }
    },
    sessionsRevoked(orgId, before) { cutOffs.set(orgId, { before: before.getTime() }); },
    close() { known.clear(); unknown.clear(); cutOffs.clear(); failures.close(); },
  };

  /** A signed session (or, with `extra`, a login link) for `who`, valid `ttlSeconds`. */
  async function sign(who: { orgId: string; role: Role; uid: string }, ttlSeconds: number, extra: Record<string, unknown> = {}) {
    const { orgId, role, uid } = who;
    const now = Date.now();
    const exp = Math.floor(now / 1000) + ttlSeconds;
    const token = await new SignJWT({ org: orgId, role, iat_ms: now, ...extra })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(BUILTIN_ISSUER).setSubject(uid).setIssuedAt(Math.floor(now / 1000)).setExpirationTime(exp)
      .sign(opts.secrets.jwtKey);
    return { token, role, expiresAt: new Date(exp * 1000).toISOString(), userId: uid };
  }
}

function sessionPrincipal(org: unknown, role: unknown, sub: unknown): Principal {
  if (typeof org !== 'string' || !org) throw invalid('session token carries no org');
  if (role !== 'org:admin' && role !== 'org:member') throw invalid('session token carries no valid role');
  return { scheme: 'session', orgId: org, role, userId: typeof sub === 'string' ? sub : null };
}
