// The dashboard's only way to the service: the public /v1 API with the session token, typed by
// the OpenAPI document the schema build writes (generated/api.ts, made by openapi-typescript in
// `npm run build`), so a route whose path, query, body or answer changes breaks this build.
import type { components, paths } from '../generated/api';

export type S = components['schemas'];

type Method = 'get' | 'post' | 'patch' | 'delete';
type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Json<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type Ok<O> = O extends { responses: infer R }
  ? (R extends { 200: infer A } ? Json<A> : R extends { 201: infer A } ? Json<A> : never) : never;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? Q : never;
type BodyOf<O> = O extends { requestBody: { content: { 'application/json': infer B } } } ? B
  : O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type PathsWith<M extends Method> = { [P in keyof paths]: paths[P][M] extends undefined | never ? never : P }[keyof paths];

export interface CallOpts<Q, B> {
  params?: Record<string, string>;
  query?: Q;
  body?: B;
  signal?: AbortSignal;
}

/** An API error envelope, kept whole so that pages show the API's own message. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) { super(message); }
}

const TOKEN_KEY = 'headwater.token';
export const session = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (t: string) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

function url(path: string, params?: Record<string, string>, query?: object): string {
  let p = path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params?.[k] ?? ''));
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const qs = q.toString();
  return qs ? `${p}?${qs}` : p;
}

async function request(method: string, path: string, o: CallOpts<object, unknown>): Promise<unknown> {
  const headers: Record<string, string> = {};
  const token = session.get();
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (o.body !== undefined) { headers['content-type'] = 'application/json'; body = JSON.stringify(o.body); }
  let res: Response;
  try {
    res = await fetch(url(path, o.params, o.query), { method: method.toUpperCase(), headers, body, signal: o.signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'the service could not be reached');
  }
  const text = await res.text();
  let parsed: any;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
  if (!res.ok) {
    const e = parsed?.error;
    throw new ApiError(res.status, e?.code ?? 'http_' + res.status, e?.message ?? `HTTP ${res.status}`);
  }
  return parsed;
}

export const api = {
  get<P extends PathsWith<'get'>>(path: P, o: CallOpts<QueryOf<Op<P, 'get'>>, never> = {}) {
    return request('get', path as string, o as CallOpts<object, unknown>) as Promise<Ok<Op<P, 'get'>>>;
  },
  post<P extends PathsWith<'post'>>(path: P, o: CallOpts<QueryOf<Op<P, 'post'>>, BodyOf<Op<P, 'post'>>> = {}) {
    return request('post', path as string, o as CallOpts<object, unknown>) as Promise<Ok<Op<P, 'post'>>>;
  },
  patch<P extends PathsWith<'patch'>>(path: P, o: CallOpts<QueryOf<Op<P, 'patch'>>, BodyOf<Op<P, 'patch'>>> = {}) {
    return request('patch', path as string, o as CallOpts<object, unknown>) as Promise<Ok<Op<P, 'patch'>>>;
  },
  delete<P extends PathsWith<'delete'>>(path: P, o: CallOpts<QueryOf<Op<P, 'delete'>>, never> = {}) {
    return request('delete', path as string, o as CallOpts<object, unknown>) as Promise<Ok<Op<P, 'delete'>>>;
  },
};
