// The binder: route modules (api/routes, ingest/) register handlers by the contract's method and
// path, and the handler's input is typed by that route's schemas.
import type { HttpServer, Reply, Req, ReqInput, RouteSpec, Validate } from './server.js';
import type { RouteDef, TypedRoute, Validated } from '../schemas/route.js';
import type { ContractRoute } from '../schemas/routes.js';

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
