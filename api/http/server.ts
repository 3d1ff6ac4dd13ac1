import { STATUS_CODES } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uws-pack';
import { us_listen_socket_close, us_socket_local_port } from './uws.js';
import type { Scheme } from '../../schemas/route.js';
import type { Logger } from '../../lib/log.js';
import { HttpError } from './errors.js';
import { Router } from './router.js';
import { isJsonContentType, jsonDepthExceeds, parseQuery } from './body.js';

export interface Validate {
  (data: unknown): boolean;
  errors?: Array<{ instancePath: string; message?: string; keyword: string; params: Record<string, unknown> }> | null;
}

/** Who is calling. Resolved by the auth hook before the handler runs. */
export interface Principal {
  scheme: Scheme;
  orgId: string | null;
  role: 'org:admin' | 'org:member' | null;
  userId: string | null;
  /** Stable id of the org key used (not the key), for per-key rate limits. */
  keyId?: string;
}

export interface Req {
  method: string;
  path: string;
  requestId: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  /** Parsed JSON body (validated), or undefined. */
  body: any;
  /** Raw body bytes for routes that take non-JSON bodies. */
  raw: Buffer | null;
  headers: Record<string, string>;
  /** The peer's address, for routes that copy every header (`allHeaders`). */
  remoteAddress?: string;
  principal: Principal;
}

export interface Reply {
  status?: number;
  data?: unknown;
  meta?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** A non-envelope body (openapi.json, plain-text receiver answers, tarballs). */
  raw?: string | Uint8Array;
  contentType?: string;
  /** HEAD answers: the content-length to report, no body. */
  headLength?: number;
}

export interface RouteSpec {
  method: string;
  path: string;
  auth: Scheme[];
  admin?: boolean;
  /** Take the body as raw bytes (no JSON parsing, no envelope checks). */
  rawBody?: boolean;
  /** Override of the global body limit (artifacts) and the error code it yields. */
  bodyLimit?: number;
  bodyLimitCode?: 'payload_too_large' | 'artifact_too_large';
  /** The answer to a body over the limit, replacing the error envelope (Segment's routes answer 400). */
  onTooLarge?: (req: Req) => Reply;
  /** An empty body stands for `{ "data": {} }`. */
  optionalBody?: boolean;
  /** Copy every request header (receivers that verify signatures). */
  allHeaders?: boolean;
  validators?: { body?: Validate; query?: Validate; params?: Validate };
  handler: (req: Req) => Reply | Promise<Reply>;
}

export type Authenticate = (authorization: string, route: RouteSpec) => Principal | Promise<Principal>;

export interface HttpServerOptions {
  app: TemplatedApp;
  log: Logger;
  bodyLimit: number;
  maxDepth: number;
  authenticate: Authenticate;
  /** Maps unexpected errors to an answer (e.g. store outages -> 503); default 500 internal. */
  mapError?: (err: unknown) => HttpError | undefined;
}

/** The `validation_failed` message of a failed validator: where, the JSON pointer of the offending
 * field (`rebase` rewrites its start, e.g. to a call's place in a batch), and what is wrong. */
export function validationMessage(v: Validate, where: string, rebase?: (ptr: string) => string): string {
  const e = v.errors?.[0];
  let ptr = e?.instancePath ?? '';
  if (rebase) ptr = rebase(ptr);
  if (e?.keyword === 'required' && typeof e.params.missingProperty === 'string') ptr += '/' + e.params.missingProperty;
  else if (e?.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') ptr += '/' + e.params.additionalProperty;
  return `${where}${ptr || '/'}: ${e?.message ?? 'is invalid'}`;
}

const STATUS_LINE = new Map<number, string>();
const statusLine = (s: number) => {
  let l = STATUS_LINE.get(s);
  if (!l) { l = `${s} ${STATUS_CODES[s] ?? 'Unknown'}`; STATUS_LINE.set(s, l); }
  return l;
};

const NO_PRINCIPAL: Principal = Object.freeze({ scheme: 'none', orgId: null, role: null, userId: null }) as Principal;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export interface HttpServer {
  add(route: RouteSpec): void;
  listen(host: string, port: number): Promise<number>;
  close(timeoutMs?: number): Promise<void>;
  readonly inFlight: number;
}

export function createHttpServer(opts: HttpServerOptions): HttpServer {
  const { app, log } = opts;
  const router = new Router<RouteSpec>();
  const reqPrefix = randomBytes(4).toString('hex');
  let reqSeq = 0;
  let inFlight = 0;
  let listenSocket: us_listen_socket | null = null;
  let closing = false;

  const send = (res: HttpResponse, state: { aborted: boolean }, requestId: string, method: string, reply: Reply) => {
    if (state.aborted) return;
    state.aborted = true; // a response is written once
    const status = reply.status ?? 200;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader('x-request-id', requestId);
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      if (reply.headLength !== undefined || method === 'HEAD') {
        res.endWithoutBody(reply.headLength ?? 0);
        return;
      }
      if (reply.raw !== undefined) {
        res.writeHeader('content-type', reply.contentType ?? 'application/octet-stream');
        res.end(reply.raw);
        return;
      }
      res.writeHeader('content-type', 'application/json');
      const meta = reply.meta ? { ...reply.meta, requestId } : { requestId };
      res.end(JSON.stringify(reply.data === undefined ? { meta } : { data: reply.data, meta }));
    });
  };

  const toHttpError = (err: unknown): HttpError => {
    if (err instanceof HttpError) return err;
    const mapped = opts.mapError?.(err);
    if (mapped) return mapped;
    log.error('unhandled error', { err: err instanceof Error ? err : new Error(String(err)) });
    return new HttpError('internal', 'internal error');
  };

  const sendError = (res: HttpResponse, state: { aborted: boolean }, requestId: string, method: string, err: unknown) => {
    if (state.aborted) return;
    const e = toHttpError(err);
    state.aborted = true;
    res.cork(() => {
      res.writeStatus(statusLine(e.status));
      res.writeHeader('x-request-id', requestId);
      if (e.headers) for (const k in e.headers) res.writeHeader(k, e.headers[k]!);
      if (method === 'HEAD') { res.endWithoutBody(0); return; }
      res.writeHeader('content-type', 'application/json');
      res.end(JSON.stringify({ error: { code: e.code, message: e.message }, meta: { requestId } }));
    });
  };

  const validate = (v: Validate | undefined, value: unknown, where: string) => {
    if (!v || v(value)) return;
    throw new HttpError('validation_failed', validationMessage(v, where));
  };

  const run = async (route: RouteSpec, req: Req, authorization: string, contentType: string, body: Buffer | null) => {
    // `signature` and `writeKey` routes authenticate in their handler (the credential is not a bearer).
    req.principal = route.auth.includes('none') || route.auth.includes('signature') || route.auth.includes('writeKey')
      ? NO_PRINCIPAL
      : await opts.authenticate(authorization, route);
    if (route.rawBody) req.raw = body;
    else if (BODY_METHODS.has(req.method) && route.optionalBody && (!body || body.length === 0)) req.body = { data: {} };
    else if (BODY_METHODS.has(req.method)) {
      if (!body || body.length === 0) throw new HttpError('malformed_request', 'request body is required');
      if (!isJsonContentType(contentType)) throw new HttpError('malformed_request', 'content-type must be application/json');
      if (jsonDepthExceeds(body, opts.maxDepth)) throw new HttpError('validation_failed', `body is nested deeper than ${opts.maxDepth} levels`);
      let parsed: unknown;
      try { parsed = JSON.parse(body.toString('utf8')); } catch { throw new HttpError('malformed_request', 'body is not valid JSON'); }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !('data' in parsed)) {
        throw new HttpError('malformed_request', 'body must be a JSON object with a top-level `data` member');
      }
      req.body = parsed;
    }
    validate(route.validators?.params, req.params, 'path ');
    validate(route.validators?.query, req.query, 'query ');
    if (!route.rawBody) validate(route.validators?.body, req.body, 'body ');
    return route.handler(req);
  };

  app.any('/*', (res: HttpResponse, r: HttpRequest) => {
    const state = { aborted: false };
    res.onAborted(() => { state.aborted = true; });
    const method = r.getCaseSensitiveMethod().toUpperCase();
    const path = r.getUrl();
    const requestId = `req_${reqPrefix}${(++reqSeq).toString(36)}`;
    if (closing) { sendError(res, state, requestId, method, new HttpError('dependency_unavailable', 'server is shutting down')); return; }
    const m = router.find(method, path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
    if (m === undefined || m === 'method') {
      sendError(res, state, requestId, method, new HttpError('not_found', `no route for ${method} ${path}`));
      return;
    }
    const route = m.value;
    const authorization = r.getHeader('authorization');
    const contentType = r.getHeader('content-type');
    const contentLength = r.getHeader('content-length');
    let headers: Record<string, string> = {};
    if (route.allHeaders) { headers = {}; r.forEach((k, v) => { headers[k] = v; }); }
    const req: Req = {
      method, path, requestId, params: m.params, query: parseQuery(r.getQuery()), body: undefined,
      raw: null, headers, principal: NO_PRINCIPAL,
    };
    if (route.allHeaders) req.remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString('utf8');
    // In flight from here until answered or abandoned; released exactly once.
    inFlight++;
    let released = false;
    const release = () => { if (!released) { released = true; inFlight--; } };
    const finish = (p: Promise<Reply>) => {
      p.then((reply) => send(res, state, requestId, method, reply),
        (err) => sendError(res, state, requestId, method, err))
        .finally(release);
    };
    if (!BODY_METHODS.has(method)) { finish(run(route, req, authorization, contentType, null)); return; }

    const limit = route.bodyLimit ?? opts.bodyLimit;
    const tooLarge = () => new HttpError(route.bodyLimitCode ?? 'payload_too_large', `body exceeds ${limit} bytes`);
    const refuseTooLarge = () => {
      if (route.onTooLarge) send(res, state, requestId, method, route.onTooLarge(req));
      else sendError(res, state, requestId, method, tooLarge());
    };
    if (contentLength && Number(contentLength) > limit) {
      // Answer at once: nothing past the limit is buffered.
      refuseTooLarge();
      release();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    let complete = false;
    // A client that vanishes before its body is complete leaves no handler running: release now,
    // or graceful shutdown would wait for it.
    res.onAborted(() => { state.aborted = true; if (!complete) release(); });
    res.onData((ab, isLast) => {
      if (over || state.aborted) return;
      size += ab.byteLength;
      if (size > limit) {
        over = true;
        refuseTooLarge();
        release();
        return;
      }
      // uWS reuses the chunk's memory after this callback: copy it.
      chunks.push(Buffer.from(ab.slice(0)));
      if (isLast) {
        complete = true;
        finish(run(route, req, authorization, contentType, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
      }
    });
  });

  return {
    add(route) { router.add(route.method, route.path, route); },
    listen(host, port) {
      return new Promise((resolve, reject) => {
        app.listen(host, port, (sock) => {
          if (!sock) { reject(new Error(`cannot listen on ${host}:${port}`)); return; }
          listenSocket = sock;
          resolve(us_socket_local_port(sock as any));
        });
      });
    },
    async close(timeoutMs = 10_000) {
      closing = true;
      if (listenSocket) { us_listen_socket_close(listenSocket); listenSocket = null; }
      const until = Date.now() + timeoutMs;
      while (inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      app.close();
    },
    get inFlight() { return inFlight; },
  };
}

