// The binder: route modules (api/routes, ingest/) register handlers by the contract's method and path.
import type { HttpServer, RouteSpec, Validate } from './server.js';
import type { RouteDef } from '../schemas/route.js';

export type Handler = RouteSpec['handler'];

/** Binds a handler to the contract route of the same method and path: auth, admin flag and
 * validators come from `schemas/`, so a served route cannot drift from the OpenAPI document. */
export function createBinder(server: HttpServer, defs: RouteDef[], validators: Record<string, Validate>) {
  return (method: RouteDef['method'], path: string, handler: Handler, extra: Partial<RouteSpec> = {}) => {
    const def = defs.find((d) => d.method === method && d.path === path);
    if (!def) throw new Error(`route ${method} ${path} is not in schemas/routes.ts`);
    server.add({
      method, path, auth: def.auth, admin: def.admin, rawBody: !!def.rawBody, optionalBody: !!def.optionalBody,
      validators: { body: validators[`${def.id}_body`], query: validators[`${def.id}_query`], params: validators[`${def.id}_params`] },
      handler, ...extra,
    });
  };
}
export type Bind = ReturnType<typeof createBinder>;
