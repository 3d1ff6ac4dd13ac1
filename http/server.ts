// The HTTP core: routing, auth, body limits and parsing, validation, the `{ data | error, meta }`
// envelope, request ids, in-flight accounting and graceful close, over either front end.
import { randomBytes } from 'node:crypto';
import type { Exchange, FrontEnd, FrontEndName } from './front-end.js';
import type { Scheme } from '../schemas/route.js';
import type { Logger } from '../lib/log.js';
import { HttpError } from './errors.js';
import { Router } from './router.js';
import { isJsonContentType, parseQuery, scanJson, SCAN_DEEP, SCAN_SUSPECT } from './body.js';
import { checkBody, checkParams } from './inputs.js';
import { BodyQueue, type BodyStream } from './body-stream.js';
import { SITE_PREFIX, type StaticSite } from './static.js';
import type { TrustedProxies } from './proxies.js';

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

/** A request's validated input. Handlers bound to a contract route get the types its schemas give
 * (api/routes/deps.ts); the defaults are what any request carries before validation. */
export interface ReqInput {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

export interface Req<I extends { [K in keyof ReqInput]: unknown } = ReqInput> {
  method: string;
  path: string;
  requestId: string;
  params: I['params'];
  query: I['query'];
  /** Parsed JSON body (validated), or undefined. */
  body: I['body'];
  /** Raw body bytes for routes that take non-JSON bodies. */
  raw: Buffer | null;
  /** The body as it arrives, for `streamBody` routes (the limit is enforced while it is read). */
  stream: BodyStream | null;
  headers: Record<string, string>;
  /** The peer's address, for routes that copy every header (`allHeaders`). */
  remoteAddress?: string;
  /** The client's address: the peer's, or the one a trusted proxy forwarded (`allHeaders` routes). */
  clientAddress?: string;
  principal: Principal;
  /** Items of the route's `items` array refused for unstorable strings: index -> message. */
  refused?: Map<number, string>;
  /** Set once the client went away before its answer (nobody will read it). */
  aborted?: boolean;
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
  /** A body written chunk by chunk as the client reads it (NDJSON exports); `contentType` applies. */
  stream?: AsyncIterable<string | Uint8Array>;
}

export interface RouteSpec {
  method: string;
  path: string;
  auth: Scheme[];
  admin?: boolean;
  /** Take the body as raw bytes (no JSON parsing, no envelope checks). */
  rawBody?: boolean;
  /** Hand the body to the handler chunk by chunk (`req.stream`) instead of buffering it: the
   * handler runs once the head is authenticated and validated, while the body still arrives. What
   * every front end owes such a route: chunks in order, memory bounded whatever the client sends
   * (BodyQueue spills), `bodyLimit` counted while reading and answered with `bodyLimitCode` as soon
   * as it is passed (the stream then throws, so the handler cleans up), and a client that goes away
   * failing the stream. */
  streamBody?: boolean;
  /** Override of the global body limit (artifacts) and the error code it yields. */
  bodyLimit?: number;
  bodyLimitCode?: 'payload_too_large' | 'artifact_too_large';
  /** The answer to a body over the limit, replacing the error envelope (Segment's routes answer 400). */
  onTooLarge?: (req: Req) => Reply;
  /** An empty body stands for `{ "data": {} }`. */
  optionalBody?: boolean;
  /** Copy every request header (receivers that verify signatures). */
  allHeaders?: boolean;
  /** JSON pointer of a body array whose members are judged one by one (batch calls). */
  items?: string;
  validators?: { body?: Validate; query?: Validate; params?: Validate };
  handler: (req: Req) => Reply | Promise<Reply>;
}

/**
 * `address`: reads the client's address (an implementation calls it only where it needs it, and
 * before it returns: the request's headers are gone after that). Throws (or rejects) with the refusal.
 */
export type Authenticate = (authorization: string, route: RouteSpec, address: () => string) => Principal | Promise<Principal>;

export interface HttpServerOptions {
  frontEnd: FrontEnd;
  log: Logger;
  bodyLimit: number;
  maxDepth: number;
  authenticate: Authenticate;
  /** Peers whose X-Forwarded-For names the client (none: the peer is the client). */
  proxies?: TrustedProxies;
  /** A directory of the service's own where streamed bodies spill what the socket delivers faster
   * than the handler consumes (files are unlinked on creation). */
  spillDir: string;
  /** Maps unexpected errors to an answer (e.g. store outages -> 503); default 500 internal. */
  mapError?: (err: unknown) => HttpError | undefined;
  /** The dashboard's static files, answered for GET / HEAD under /ui (not JSON API routes). */
  site?: StaticSite;
  /** Told of every answer of a matched route: its path template, method, status and duration. */
  observe?: (route: string, method: string, status: number, seconds: number) => void;
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

const NO_PRINCIPAL: Principal = Object.freeze({ scheme: 'none', orgId: null, role: null, userId: null }) as Principal;
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export interface HttpServer {
  add(route: RouteSpec): void;
  listen(host: string, port: number): Promise<number>;
  close(timeoutMs?: number): Promise<void>;
  readonly inFlight: number;
  /** Which front end serves: `uws` or `node:http`. */
  readonly frontEnd: FrontEndName;
}

export function createHttpServer(opts: HttpServerOptions): HttpServer {
  const { frontEnd, log } = opts;
  const router = new Router<RouteSpec>();
  const reqPrefix = randomBytes(4).toString('hex');
  let reqSeq = 0;
  let inFlight = 0;
  let closing = false;

  /** `close`: the request body was not read to its end, so the connection cannot carry another. */
  const send = (ex: Exchange, requestId: string, reply: Reply, close?: boolean): void | Promise<void> => {
    const status = reply.status ?? 200;
    if (reply.stream && ex.method !== 'HEAD') {
      return ex.stream({ status, requestId, headers: reply.headers, contentType: reply.contentType }, reply.stream)
        .catch((err) => log.warn('streamed answer failed', { requestId, err: String(err) }));
    }
    if (reply.headLength !== undefined || ex.method === 'HEAD') {
      ex.respond({ status, requestId, headers: reply.headers, headLength: reply.headLength ?? 0, close });
    } else if (reply.raw !== undefined) {
      ex.respond({ status, requestId, headers: reply.headers, contentType: reply.contentType ?? 'application/octet-stream', body: reply.raw, close });
    } else {
      const meta = reply.meta ? { ...reply.meta, requestId } : { requestId };
      const body = JSON.stringify(reply.data === undefined ? { meta } : { data: reply.data, meta });
      ex.respond({ status, requestId, headers: reply.headers, contentType: 'application/json', body, close });
    }
  };

  const toHttpError = (err: unknown): HttpError => {
    if (err instanceof HttpError) return err;
    const mapped = opts.mapError?.(err);
    if (mapped) return mapped;
    log.error('unhandled error', { err: err instanceof Error ? err : new Error(String(err)) });
    return new HttpError('internal', 'internal error');
  };

  /** `close`: the request body was not read to its end, so the connection cannot carry another. */
  const sendError = (ex: Exchange, requestId: string, err: unknown, close?: boolean) => {
    const e = toHttpError(err);
    if (ex.method === 'HEAD') { ex.respond({ status: e.status, requestId, headers: e.headers, headLength: 0, close }); return; }
    const body = JSON.stringify({ error: { code: e.code, message: e.message }, meta: { requestId } });
    ex.respond({ status: e.status, requestId, headers: e.headers, contentType: 'application/json', body, close });
  };

  const validate = (v: Validate | undefined, value: unknown, where: string) => {
    if (!v || v(value)) return;
    throw new HttpError('validation_failed', validationMessage(v, where));
  };

  /** `principal`: what the headers' credential resolved to, started before the body was read. */
  const run = async (route: RouteSpec, req: Req, principal: Principal | Promise<Principal>, contentType: string, body: Buffer | null) => {
    req.principal = await principal;
    if (route.streamBody) { /* req.stream is set by the front end */ }
    else if (route.rawBody) req.raw = body;
    else if (BODY_METHODS.has(req.method) && route.optionalBody && (!body || body.length === 0)) req.body = { data: {} };
    else if (BODY_METHODS.has(req.method)) {
      if (!body || body.length === 0) throw new HttpError('malformed_request', 'request body is required');
      if (!isJsonContentType(contentType)) throw new HttpError('malformed_request', 'content-type must be application/json');
      const scan = scanJson(body, opts.maxDepth);
      if (scan === SCAN_DEEP) throw new HttpError('validation_failed', `body is nested deeper than ${opts.maxDepth} levels`);
      let parsed: unknown;
      try { parsed = JSON.parse(body.toString('utf8')); } catch { throw new HttpError('malformed_request', 'body is not valid JSON'); }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !('data' in parsed)) {
        throw new HttpError('malformed_request', 'body must be a JSON object with a top-level `data` member');
      }
      req.body = parsed;
      if (scan === SCAN_SUSPECT) req.refused = checkBody(parsed as Record<string, unknown>, route.items);
    }
    // Receivers answer bad input in their provider's own convention (they check it themselves).
    if (!route.auth.includes('signature')) checkParams(req.params, req.query);
    validate(route.validators?.params, req.params, 'path ');
    validate(route.validators?.query, req.query, 'query ');
    if (!route.rawBody && !route.streamBody) validate(route.validators?.body, req.body, 'body ');
    return route.handler(req);
  };

  const handle = (ex: Exchange) => {
    const { method, path } = ex;
    const requestId = `req_${reqPrefix}${(++reqSeq).toString(36)}`;
    if (closing) { sendError(ex, requestId, new HttpError('dependency_unavailable', 'server is shutting down')); return; }
    if (opts.site && (method === 'GET' || method === 'HEAD') && (path === SITE_PREFIX || path.startsWith(SITE_PREFIX + '/'))) {
      const a = opts.site.answer(path, ex.header('accept-encoding'));
      if (method === 'HEAD') ex.respond({ status: a.status, requestId, headers: { ...a.headers, 'content-type': a.contentType }, headLength: a.body.length });
      else ex.respond({ status: a.status, requestId, headers: a.headers, contentType: a.contentType, body: a.body });
      return;
    }
    const m = router.find(method, path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
    if (m === undefined || m === 'method') {
      sendError(ex, requestId, new HttpError('not_found', `no route for ${method} ${path}`));
      return;
    }
    const route = m.value;
    if (opts.observe) {
      const observe = opts.observe;
      const t0 = performance.now();
      const respond = ex.respond.bind(ex);
      ex.respond = (a) => { respond(a); observe(route.path, method, a.status, (performance.now() - t0) / 1000); };
      const stream = ex.stream.bind(ex);
      ex.stream = (a, chunks) => stream(a, chunks).finally(() => observe(route.path, method, a.status, (performance.now() - t0) / 1000));
    }
    // Headers are read now: uWS frees the request when this call returns.
    const contentType = ex.header('content-type');
    const contentLength = ex.header('content-length');
    const req: Req = {
      method, path, requestId, params: m.params, query: parseQuery(ex.query), body: undefined,
      raw: null, stream: null, headers: route.allHeaders ? ex.headers() : {}, principal: NO_PRINCIPAL,
    };
    // `signature` and `writeKey` routes authenticate in their handler (the credential is not a bearer).
    const bearer = !(route.auth.includes('none') || route.auth.includes('signature') || route.auth.includes('writeKey'));
    // The client's address only when something reads it: uWS makes a new ArrayBuffer for the peer's
    // (1.0-1.7 us a read, 1.3 % of the main thread's samples under single track load), and a known
    // key needs none. Read before this callback returns or never (see Authenticate).
    let peer: string | undefined;
    let address: string | undefined;
    const peerOf = () => (peer ??= ex.remoteAddress());
    const addressOf = () => (address ??= opts.proxies && peerOf() ? opts.proxies.client(peerOf(), ex.header('x-forwarded-for')) : peerOf());
    if (route.allHeaders) { req.remoteAddress = peerOf(); req.clientAddress = addressOf(); }
    // The credential is judged from the headers before any of the body is read: a bad one costs
    // no body (the connection is closed instead), and a pending lookup holds the body back.
    let principal: Principal | Promise<Principal> = NO_PRINCIPAL;
    if (bearer) {
      try { principal = opts.authenticate(ex.header('authorization'), route, addressOf); }
      catch (err) { sendError(ex, requestId, err, BODY_METHODS.has(method)); return; }
      // Awaited where it is used; an answer given first (413) leaves it unobserved.
      if (principal instanceof Promise) principal.catch(() => {});
    }
    // In flight from here until answered or abandoned; released exactly once.
    inFlight++;
    let released = false;
    let complete = false;
    const release = () => { if (!released) { released = true; inFlight--; } };
    // A client that vanishes before its body is complete leaves no handler running: release now,
    // or graceful shutdown would wait for it. Once the handler runs, it releases when it ends.
    ex.onAborted(() => { req.aborted = true; if (!complete) release(); });
    // A streamed body may still be arriving when its handler (or its auth) fails: such an answer
    // closes the connection rather than read the rest.
    let bodyDone = !BODY_METHODS.has(method) || !route.streamBody;
    const finish = (p: Promise<Reply>) => {
      complete = true;
      p.then((reply) => send(ex, requestId, reply), (err) => sendError(ex, requestId, err, !bodyDone)).finally(release);
    };
    if (!BODY_METHODS.has(method)) { finish(run(route, req, principal, contentType, null)); return; }

    const limit = route.bodyLimit ?? opts.bodyLimit;
    const tooLarge = () => new HttpError(route.bodyLimitCode ?? 'payload_too_large', `body exceeds ${limit} bytes`);
    const refuseTooLarge = () => {
      if (route.onTooLarge) send(ex, requestId, route.onTooLarge(req), true);
      else sendError(ex, requestId, tooLarge(), true);
    };
    if (contentLength && Number(contentLength) > limit) {
      // Answer at once: nothing past the limit is buffered.
      refuseTooLarge();
      release();
      return;
    }
    if (principal instanceof Promise) {
      // The body is paused (below, once onData is set: uWS wants it during this call) until the
      // lookup ends; these callbacks run after that.
      principal.then(() => { if (!released) ex.resume(); }, (err) => {
        // Refused before the body was complete: answer now and close; a complete body's run answers it.
        if (complete || released) return;
        sendError(ex, requestId, err, true);
        release();
      });
    }
    if (route.streamBody) {
      // The handler reads while the body arrives; the limit is checked per chunk and answered at
      // once (the handler's reader then fails and it cleans up what it stored).
      let size = 0;
      let over = false;
      const body = new BodyQueue({ pause: () => ex.pause(), resume: () => ex.resume() }, opts.spillDir);
      req.stream = body;
      ex.onAborted(() => { req.aborted = true; body.fail(new HttpError('malformed_request', 'the client closed the request')); });
      ex.onData((chunk, isLast) => {
        if (over) return;
        if (isLast) bodyDone = true;
        size += chunk.byteLength;
        if (size > limit) {
          over = true;
          const e = tooLarge();
          sendError(ex, requestId, e, true);
          body.fail(e);
          return;
        }
        body.push(chunk, isLast);
      });
      if (principal instanceof Promise) ex.pause();
      finish(run(route, req, principal, contentType, null).finally(() => body.close()));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    ex.onData((chunk, last) => {
      if (over || released) return;
      size += chunk.byteLength;
      if (size > limit) {
        over = true;
        refuseTooLarge();
        release();
        return;
      }
      if (chunk.byteLength) chunks.push(chunk);
      if (last) finish(run(route, req, principal, contentType, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    });
    if (principal instanceof Promise) ex.pause();
  };

  return {
    add(route) { router.add(route.method, route.path, route); },
    listen(host, port) { return frontEnd.listen(host, port, handle); },
    async close(timeoutMs = 10_000) {
      closing = true;
      frontEnd.stopListening();
      const until = Date.now() + timeoutMs;
      while (inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      frontEnd.close();
    },
    get inFlight() { return inFlight; },
    get frontEnd() { return frontEnd.name; },
  };
}
