import type { Static, TObject, TOptional, TSchema } from '@sinclair/typebox';

// Credential schemes (OpenAPI description, "Authentication").
export type Scheme = 'none' | 'operator' | 'session' | 'apiKey' | 'deployKey' | 'pipelineKey' | 'signature' | 'writeKey';

export interface ResponseDef {
  description: string;
  /** JSON schema of the body; omitted for bodiless answers (HEAD) or non-JSON ones. */
  schema?: TSchema;
  /** Defaults to application/json. */
  contentType?: string;
}

/** One route of the contract. The OpenAPI document and the validators are generated from these. */
export interface RouteDef {
  /** operationId, also the prefix of the generated validator names. camelCase, unique. */
  id: string;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'HEAD' | 'OPTIONS';
  /** OpenAPI path template, e.g. /v1/apps/{id}. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  /** Schemes accepted. `session` routes that need org:admin set `admin`. */
  auth: Scheme[];
  admin?: boolean;
  params?: TSchema;
  query?: TSchema;
  /** Full JSON request body (including the `data` wrapper). */
  body?: TSchema;
  /** An empty request body stands for `{ "data": {} }`. */
  optionalBody?: boolean;
  /** A non-JSON request body (raw bytes, provider payloads): its media type. */
  rawBody?: string;
  /** Documentation only (never compiled into a validator): the shape of a `rawBody`. */
  rawBodySchema?: TSchema;
  /** Documentation only: request headers (Type.Object of strings), emitted as OpenAPI header parameters. */
  headers?: TSchema;
  responses: Record<number, ResponseDef>;
}

/** A route whose method, path and request schemas keep their own types (schemas/routes/define.ts). */
export interface TypedRoute<
  M extends RouteDef['method'] = RouteDef['method'], P extends string = string,
  Pa extends TSchema | undefined = TSchema | undefined, Q extends TSchema | undefined = TSchema | undefined,
  B extends TSchema | undefined = TSchema | undefined,
> extends RouteDef {
  method: M;
  path: P;
  params?: Pa;
  query?: Q;
  body?: B;
}

type Flatten<T> = { [K in keyof T]: T[K] } & {};

/** What a value looks like once its validator accepted it: `Static<T>`, except that optional
 * object members marked `WithDefault` are present. */
export type Validated<T> = T extends TObject<infer P>
  ? Flatten<
    { [K in keyof P as P[K] extends TOptional<TSchema> ? (P[K] extends { default: unknown } ? K : never) : K]: Validated<P[K]> } &
    { [K in keyof P as P[K] extends TOptional<TSchema> ? (P[K] extends { default: unknown } ? never : K) : never]?: Validated<P[K]> }
  >
  : T extends TSchema ? Static<T> : never;
