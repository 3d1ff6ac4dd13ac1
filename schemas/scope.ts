// Which routes the org deploy key may call. The contract gives it the release lifecycle only
// (the README's Security section, the role matrix): executions (list, one, cancel),
// artifacts (HEAD, PUT), journeys (list, one, enable/disable) and `GET /v1/users/me`. Everything
// else answers 403 `deploy_key_scope` (operator routes 401, like every org credential). Auth
// enforces this table and routes/define.ts refuses a route whose `auth` disagrees with it, so the served
// rule, the OpenAPI document and the contract cannot drift apart.
export const DEPLOY_KEY_ROUTES: ReadonlySet<string> = new Set([
  'GET /v1/executions',
  'GET /v1/executions/{id}',
  'POST /v1/executions/{id}/cancel',
  'HEAD /v1/artifacts/{digest}',
  'PUT /v1/artifacts/{digest}',
  'GET /v1/journeys',
  'GET /v1/journeys/{key}',
  'PATCH /v1/journeys/{key}',
  'GET /v1/users/me',
]);

/** Whether the deploy key may call the route of this method and path template. */
export const deployKeyMayCall = (method: string, path: string): boolean => DEPLOY_KEY_ROUTES.has(`${method} ${path}`);
