// The route builder of the contract: generated error answers, response helpers and the request
// pieces several tags share. Every file of this folder builds its routes with `route()`, which
// keeps each route's method, path and request schemas in its type, so the handlers bound to it
// (api/routes/) take their input types from the schema.
import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import type { ResponseDef, RouteDef, TypedRoute } from '../route.js';
import { ErrorEnvelope } from '../common.js';
import { deployKeyMayCall } from '../scope.js';

const ERR = {
  400: '`malformed_request`: unparseable JSON, wrong content type, or a body without the top-level `data` wrapper.',
  401: '`invalid_key`: missing, malformed, unknown, expired or revoked bearer, or a valid credential of a scheme this route does not accept.',
  '403deploy': '`deploy_key_scope`: an org deploy key, which is valid only on the release lifecycle (executions, artifacts, journeys, `GET /v1/users/me`).',
  '403admin': '`forbidden`: an `org:member` session; this mutation needs `org:admin`.',
  404: '`not_found`: no such resource in the credential\'s org (a resource of another org is answered 404, never 403).',
  413: '`payload_too_large`: the body exceeds the global body limit (default 1 MiB, `HEADWATER_BODY_LIMIT`).',
  422: '`validation_failed`: the request breaks its schema (or the body nests deeper than 64 levels); the message names the offending field as a JSON pointer.',
} as const;

interface Spec extends Omit<RouteDef, 'responses'> {
  ok: Record<number, ResponseDef>;
  /** Extra error explanations per status, added to the generated ones. */
  errors?: Record<number, string>;
  /** false: `ok` holds every response (no generated error answers). */
  autoErrors?: false;
  /** Generated error statuses that this route cannot give. */
  omit?: number[];
}

function hasConstraints(schema: TSchema | undefined): boolean {
  return !!schema && /"(minLength|maxLength|pattern|enum|const|minimum|maximum|format)"/.test(JSON.stringify(schema));
}

type Opt = TSchema | undefined;

export function route<M extends RouteDef['method'], P extends string, Pa extends Opt = undefined, Q extends Opt = undefined, B extends Opt = undefined>(
  spec: Omit<Spec, 'method' | 'path' | 'params' | 'query' | 'body'> & { method: M; path: P; params?: Pa; query?: Q; body?: B },
): TypedRoute<M, P, Pa, Q, B> {
  const { ok, errors = {}, autoErrors, omit = [], ...def } = spec;
  if (def.auth.includes('deployKey') !== deployKeyMayCall(def.method, def.path)) {
    throw new Error(`${def.method} ${def.path}: its deployKey auth disagrees with DEPLOY_KEY_ROUTES (schemas/scope.ts, the contract's release lifecycle)`);
  }
  const responses: Record<number, ResponseDef> = { ...ok };
  if (autoErrors === false) return { ...def, responses } as TypedRoute<M, P, Pa, Q, B>;
  const lines: Record<number, string[]> = {};
  const add = (status: number, text: string) => { (lines[status] ??= []).push(text); };
  const orgCredential = def.auth.some((s) => s === 'session' || s === 'apiKey' || s === 'pipelineKey');
  if (def.body) add(400, ERR[400]);
  if (!def.auth.includes('none') && !def.auth.includes('signature')) add(401, ERR[401]);
  if (orgCredential && !def.auth.includes('deployKey')) add(403, ERR['403deploy']);
  if (def.admin) add(403, ERR['403admin']);
  if (def.params) add(404, ERR[404]);
  if (def.body) add(413, ERR[413]);
  if (def.body || def.query || hasConstraints(def.params)) add(422, ERR[422]);
  for (const status of omit) delete lines[status];
  for (const [status, text] of Object.entries(errors)) add(Number(status), text);
  for (const status of Object.keys(lines).map(Number).sort((a, b) => a - b)) {
    responses[status] = { description: lines[status].join('\n\n'), schema: ErrorEnvelope };
  }
  return { ...def, responses } as TypedRoute<M, P, Pa, Q, B>;
}

export const json = (description: string, schema: TSchema): ResponseDef => ({ description, schema });
export const text = (description: string): ResponseDef => ({ description, contentType: 'text/plain', schema: Type.String() });
export const none = (description: string): ResponseDef => ({ description });
export const Params = <K extends string>(...names: K[]) =>
  Type.Object(Object.fromEntries(names.map((n) => [n, Type.String()])) as Record<K, ReturnType<typeof Type.String>>);

/** A filter value of list queries. */
export const Filter = Type.String({ minLength: 1, maxLength: 200 });
