// Segment-compatible ingestion: Segment's tracking API under /segment/v1, authenticated by a source
// write key, mapped onto identify and track and sent through the same stream, workers, dedup,
// governance, quotas and segments as /v1/batch. Answers follow Segment's conventions: 200 once the
// request is handled (a call the pipeline refuses on its own is kept in `segment_rejections`),
// 400 for what retrying cannot fix, 401 / 403 for the key, 429 + Retry-After, 503 for an outage.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Bind } from '../../http/bind.js';
import type { HttpError } from '../../http/errors.js';
import type { Origin } from '../../http/proxies.js';
import { validationMessage, type Reply, type Req, type Validate } from '../../http/server.js';
import type { Logger } from '../../lib/log.js';
import type { IngestCall } from '../../pipeline/types.js';
import type { Submitter } from '../gate.js';
import type { Activity } from '../activity.js';
import type { Limits } from '../limits.js';
import { WRITE_KEY_PREFIX, type WriteKeyInfo, type WriteKeys } from './keys.js';
import { mapCall, SEGMENT_TYPES, type SegmentType } from './map.js';
import { accepted, corsPolicy, PREFLIGHT_HEADERS, refused } from './answers.js';
import { recordRejections, type Rejection } from './rejections.js';
import { basicKey, CLIENT_PATH, clientIp, parse } from './request.js';

export const CALL_LIMIT = 32 * 1024;
export const BATCH_LIMIT = 500 * 1024;

export interface SegmentDeps {
  keys: WriteKeys;
  stream: Submitter;
  activity: Activity;
  limits: Limits;
  validators: Record<string, Validate>;
  pool: pg.Pool;
  log: Logger;
  /** '*' or a comma-separated list of allowed origins. */
  corsOrigins: string;
  /** Maps a thrown error to an answer (outages -> 503); undefined for a bug (500). */
  mapError: (err: unknown) => HttpError | undefined;
  /** Where browsers reach this service (forwarded headers count only from trusted proxies). */
  origin: (req: Req) => Origin;
}

const SHORT: Record<SegmentType, string> = { identify: 'i', track: 't', page: 'p', screen: 's', group: 'g', alias: 'a' };

interface Item { type: unknown; call: Record<string, unknown>; sentAt: unknown; tooLarge?: boolean }

// Refusals are Replies (always with a status); the other results never have one.
const isReply = <T extends object>(v: T | Reply): v is Reply => 'status' in v;

export function segmentRoutes(bind: Bind, d: SegmentDeps) {
  const cors = corsPolicy(d.corsOrigins);
  const prefix = `seg.${randomBytes(6).toString('base64url')}.`;
  let seq = 0;

  /** The key's source, or the refusal to answer. */
  const authenticate = async (key: string | undefined, h: Record<string, string>): Promise<WriteKeyInfo | Reply> => {
    if (!key) return refused(401, 'invalid_key', 'missing write key (Basic auth or `writeKey` in the body)', h);
    if (!key.startsWith(`${WRITE_KEY_PREFIX}_`)) return refused(401, 'invalid_key', 'unknown write key', h);
    const r = d.keys.resolve(key);
    const info = r instanceof Promise ? await r : r;
    if (!info) return refused(401, 'invalid_key', 'unknown write key', h);
    if (info.archived) return refused(403, 'forbidden', 'the source of this write key is archived', h);
    return info;
  };

  /** Authenticates by the Basic header, else by `writeKey` in the parsed body. */
  const authParse = async (req: Req, h: Record<string, string>): Promise<{ info: WriteKeyInfo; body: Record<string, unknown> } | Reply> => {
    const headerKey = basicKey(req.headers.authorization);
    const byHeader = headerKey ? await authenticate(headerKey, h) : undefined;
    if (byHeader && isReply(byHeader)) return byHeader;
    const p = parse(req.raw);
    if (!p.ok) return refused(400, 'malformed_request', p.message, h);
    const info = byHeader ?? await authenticate(typeof p.body.writeKey === 'string' ? p.body.writeKey : undefined, h);
    return isReply(info) ? info : { info, body: p.body };
  };

  /** Maps, validates and submits the calls; what a call cannot do is kept, the rest are answered 200. */
  const ingest = async (req: Req, info: WriteKeyInfo, batch: { items: Item[]; single: boolean; headers: Record<string, string> }): Promise<Reply> => {
    const { items, single, headers: h } = batch;
    const ip = CLIENT_PATH.test(req.path) ? clientIp(req) : undefined;
    const receivedAt = Date.now();
    const rejected: Rejection[] = [];
    const reject = (call: unknown, status: number, code: string, message: string) => {
      rejected.push({ call, status, code, message, messageId: typeof (call as any)?.messageId === 'string' ? (call as any).messageId : null });
    };
    const a = await d.limits.admit(`wk:${info.keyId}`, info.orgId, Math.max(1, items.length));
    if (!a.ok) return refused(429, 'rate_limited', 'too many requests for this write key', { ...h, 'retry-after': String(a.retryAfter) });

    const pending: IngestCall[] = [];
    const origin: unknown[] = [];
    let tracks = 0;
    for (const it of items) {
      if (it.tooLarge) { reject(it.call, 400, 'malformed_request', `call exceeds ${CALL_LIMIT} bytes`); continue; }
      if (typeof it.type !== 'string' || !SEGMENT_TYPES.has(it.type)) { reject(it.call, 400, 'malformed_request', 'type: must be identify, track, page, screen, group or alias'); continue; }
      const m = mapCall(it.type as SegmentType, it.call, { sentAt: it.sentAt, receivedAt, ip });
      if (!m.ok) {
        if (single) return refused(400, 'malformed_request', m.message, h);
        reject(it.call, 400, 'malformed_request', m.message);
        continue;
      }
      const built: IngestCall[] = [];
      let bad: string | undefined;
      for (const c of m.calls) {
        const v = d.validators[`${c.kind}_body`]!;
        if (!v({ data: { ...c.body, sourceId: info.sourceId } })) { bad = validationMessage(v, `${it.type} `, (p) => p.replace(/^\/data/, '')); break; }
        built.push({ id: prefix + (++seq).toString(36), kind: c.kind, orgId: info.orgId, appId: info.appId, sourceId: info.sourceId, environment: info.environment, receivedAt, body: c.body as any });
      }
      if (bad !== undefined) {
        if (single) return refused(400, 'malformed_request', bad, h);
        reject(it.call, 400, 'validation_failed', bad);
        continue;
      }
      for (const c of built) {
        if (c.kind === 'track' && ++tracks > a.quotaLeft) { reject(it.call, 429, 'over_quota', 'the monthly event quota of this organization is used up'); continue; }
        pending.push(c);
        origin.push(it.call);
      }
    }

    if (pending.length) {
      const results = await d.stream.submit(pending, { abandoned: () => req.aborted === true });
      let counted = 0;
      let unavailable = false;
      for (let i = 0; i < pending.length; i++) {
        const r = results[i]!;
        if (r.status === 503) { unavailable = true; continue; }
        if ('error' in r) { reject(origin[i], r.status, r.error.code, r.error.message); continue; }
        d.activity.touch(info.sourceId, info.appId, receivedAt);
        if (pending[i]!.kind === 'track' && r.status === 201) counted++;
      }
      if (counted) d.limits.count(info.orgId, counted);
      // The SDK retries the whole request: what was applied dedups, the refusals are kept then.
      if (unavailable) return refused(503, 'dependency_unavailable', 'the pipeline is unavailable; retry', h);
    }
    if (rejected.length) {
      await recordRejections(d.pool, info, rejected);
      d.log.info('segment calls refused', { orgId: info.orgId, sourceId: info.sourceId, count: rejected.length, first: rejected[0]!.message });
    }
    return accepted(h);
  };

  /** Runs a handler, turning thrown outages into Segment answers. */
  const guard = (fn: (req: Req, h: Record<string, string>) => Promise<Reply>) => async (req: Req): Promise<Reply> => {
    const h = cors(req.headers.origin);
    try {
      return await fn(req, h);
    } catch (err) {
      const mapped = d.mapError(err);
      if (mapped) return refused(mapped.status, mapped.code, mapped.message, mapped.headers ? { ...h, ...mapped.headers } : h);
      d.log.error('segment route failed', { err: err instanceof Error ? err : new Error(String(err)) });
      return refused(500, 'internal', 'internal error', h);
    }
  };

  const tooLarge = (limit: number) => (req: Req): Reply => refused(400, 'malformed_request', `body exceeds ${limit} bytes`, cors(req.headers.origin));
  const opts = (limit: number) => ({ allHeaders: true, bodyLimit: limit, onTooLarge: tooLarge(limit) });
  const preflight = (path: `/segment/v1/${string}`) => bind('OPTIONS', path, async (req) => ({ status: 204, raw: '', headers: { ...cors(req.headers.origin), ...PREFLIGHT_HEADERS } }), { allHeaders: true });

  for (const type of Object.keys(SHORT) as SegmentType[]) {
    const handler = guard(async (req, h) => {
      const a = await authParse(req, h);
      if (isReply(a)) return a;
      return ingest(req, a.info, { items: [{ type, call: a.body, sentAt: a.body.sentAt }], single: true, headers: h });
    });
    for (const path of [`/segment/v1/${type}`, `/segment/v1/${SHORT[type]}`] as const) {
      bind('POST', path, handler, opts(CALL_LIMIT));
      preflight(path);
    }
  }

  const batch = guard(async (req, h) => {
    const a = await authParse(req, h);
    if (isReply(a)) return a;
    const { info, body } = a;
    if (!Array.isArray(body.batch)) return refused(400, 'malformed_request', 'batch: must be an array of calls', h);
    const ctx = isObject(body.context) ? body.context : undefined;
    const integrations = isObject(body.integrations) ? body.integrations : undefined;
    // A call can be over its limit only when the whole body is.
    const measure = req.raw!.length > CALL_LIMIT;
    const items = body.batch.map((c: unknown) => {
      if (!isObject(c)) return { type: undefined, call: c as any, sentAt: undefined };
      let call = c;
      if (ctx || integrations) {
        call = { ...c };
        if (ctx) call.context = isObject(c.context) ? { ...ctx, ...c.context } : ctx;
        if (integrations) call.integrations = isObject(c.integrations) ? { ...integrations, ...c.integrations } : integrations;
      }
      return { type: c.type, call, sentAt: c.sentAt ?? body.sentAt, tooLarge: measure && Buffer.byteLength(JSON.stringify(c)) > CALL_LIMIT };
    });
    if (items.length === 0) return accepted(h);
    return ingest(req, info, { items, single: false, headers: h });
  });
  for (const path of ['/segment/v1/batch', '/segment/v1/b'] as const) {
    bind('POST', path, batch, opts(BATCH_LIMIT));
    preflight(path);
  }

  // The browser SDK's own delivery metrics: accepted and discarded.
  bind('POST', '/segment/v1/m', async (req) => accepted(cors(req.headers.origin)), opts(CALL_LIMIT));
  preflight('/segment/v1/m');

  bind('GET', '/segment/v1/projects/{writeKey}/settings', guard(async (req, h) => {
    const key = req.params.writeKey;
    const info = await authenticate(key, h);
    if (isReply(info)) return info;
    const { host, protocol } = d.origin(req);
    const doc = {
      integrations: { 'Segment.io': { apiKey: key, apiHost: `${host}/segment/v1`, protocol, unbundledIntegrations: [], addBundledMetadata: false, maybeBundledConfigIds: {} } },
      plan: { track: { __default: { enabled: true, integrations: {} } }, identify: { __default: { enabled: true } }, group: { __default: { enabled: true } } },
      edgeFunction: {},
      analyticsNextEnabled: true,
      middlewareSettings: {},
      enabledMiddleware: {},
      metrics: { sampleRate: 0 },
      legacyVideoPluginsEnabled: false,
      remotePlugins: [],
    };
    // The document names the write key and depends on the request's host: the browser may keep it
    // a minute, a shared cache never (it could not know which headers it was built from).
    return { status: 200, raw: JSON.stringify(doc), contentType: 'application/json', headers: { ...h, 'cache-control': 'private, max-age=60' } };
  }), { allHeaders: true });
  preflight('/segment/v1/projects/{writeKey}/settings');
}

const isObject = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

