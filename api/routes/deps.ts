import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Config } from '../config.js';
import type { Logger } from '../../lib/log.js';
import type { Auth } from '../auth/auth.js';
import type { Secrets } from '../auth/secrets.js';
import type { HttpServer, Reply, Req, ReqInput, RouteSpec, Validate } from '../http/server.js';
import type { FrontEndName } from '../http/front-end.js';
import type { RouteDef, TypedRoute, Validated } from '../../schemas/route.js';
import type { ContractRoute } from '../../schemas/routes.js';
import type { CallResult, IngestCall } from '../../pipeline/types.js';

/** What route modules receive: clients are passed in, never imported as singletons. */
export interface Deps {
  pool: pg.Pool;
  ch: ClickHouseClient;
  auth: Auth;
  secrets: Secrets;
  config: Config;
  log: Logger;
  /** Named readiness checks of the configured dependencies. */
  checks: Record<string, () => Promise<boolean>>;
  /** Receive times this process has not flushed to Postgres yet (ingest/activity.ts). */
  recent?: RecentActivity;
  /** The HTTP front end serving (reported by /health/ready). */
  frontEnd: FrontEndName;
  /** The ingestion pipeline, for replaying promoted (held) calls; absent -> promote is 503. */
  ingest?: { replay(calls: IngestCall[]): Promise<CallResult[]> };
}

export interface RecentActivity { source(id: string): number | undefined; app(id: string): number | undefined }

/** The later of a stored time and an unflushed one. */
export function latest(stored: Date | string | null, unflushed: number | undefined): Date | string | null {
  if (unflushed === undefined) return stored;
  if (stored === null) return new Date(unflushed);
  return new Date(stored).getTime() >= unflushed ? stored : new Date(unflushed);
}

type Method = ContractRoute['method'];
type PathOf<M extends Method> = Extract<ContractRoute, { method: M }>['path'];
type Match<R, M, P> = R extends { method: M; path: infer RP } ? (P extends RP ? R : never) : never;
/** The contract route bound at `method path` (a union of paths gives the union of their routes). */
export type RouteAt<M extends Method, P> = P extends unknown ? Match<ContractRoute, M, P> : never;

type Part<S, Otherwise> = [Exclude<S, undefined>] extends [never] ? Otherwise : Validated<Exclude<S, undefined>>;
/** A handler's input as the route's validators leave it: `Static<>` of its schemas. */
export type InputOf<R extends TypedRoute> = {
  params: Part<R['params'], ReqInput['params']>;
  query: Part<R['query'], ReqInput['query']>;
  body: Part<R['body'], ReqInput['body']>;
};
export type Handler<R extends TypedRoute = TypedRoute> = (req: Req<InputOf<R>>) => Reply | Promise<Reply>;

/** Binds a handler to the contract route of the same method and path: auth, admin flag and
 * validators come from `schemas/`, so a served route cannot drift from the OpenAPI document, and
 * the handler's `req.params`, `req.query` and `req.body` are typed by the route's schemas (a
 * schema change that a handler disagrees with breaks the build). */
export function createBinder(server: HttpServer, defs: readonly RouteDef[], validators: Record<string, Validate>) {
  return <M extends Method, P extends PathOf<M>>(method: M, path: P, handler: Handler<RouteAt<M, P>>, extra: Partial<Omit<RouteSpec, 'handler'>> = {}) => {
    const def = defs.find((d) => d.method === method && d.path === path);
    if (!def) throw new Error(`route ${method} ${path} is not in schemas/routes.ts`);
    server.add({
      method, path, auth: def.auth, admin: def.admin, rawBody: !!def.rawBody, optionalBody: !!def.optionalBody,
      validators: { body: validators[`${def.id}_body`], query: validators[`${def.id}_query`], params: validators[`${def.id}_params`] },
      // The validators above stand behind the handler's input types.
      handler: handler as RouteSpec['handler'], ...extra,
    });
  };
}
export type Bind = ReturnType<typeof createBinder>;
