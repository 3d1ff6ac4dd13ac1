// Ingestion front end: identify, track and batch. The hot path: key auth from cache (api/auth),
// precompiled validators, source routing from cache, one stream submit per request, and the
// worker's answer relayed as the HTTP answer.
import { randomBytes } from 'node:crypto';
import type { Bind, Handler, RouteAt } from '../http/bind.js';
import { HttpError } from '../http/errors.js';
import { validationMessage, type Reply, type Req, type Validate } from '../http/server.js';
import { callError, type ErrorCode } from '../schemas/errors.js';
import type { CallKind, CallResult, IngestCall } from '../pipeline/types.js';
import type { SourceDirectory, SourceInfo } from './directory.js';
import type { Activity } from './activity.js';
import type { Limits } from './limits.js';
import type { Submitter } from './gate.js';


export interface IngestDeps {
  directory: SourceDirectory;
  stream: Submitter;
  activity: Activity;
  validators: Record<string, Validate>;
  limits: Limits;
}

const OVER_QUOTA = callError('over_quota', 'the monthly event quota of this organization is used up');

export function ingestRoutes(bind: Bind, d: IngestDeps) {
  const prefix = randomBytes(6).toString('base64url');
  let seq = 0;
  const callId = () => `${prefix}.${(++seq).toString(36)}`;

  const toReply = (r: CallResult): Reply => {
    if ('error' in r) throw new HttpError(r.error.code as ErrorCode, r.error.message, (r as any).headers);
    return { status: r.status, data: r.data };
  };

  /** The source's routing when it is this org's; null answers not_found (another org's ids do not leak). */
  const sourceOf = async (orgId: string, sourceId: string): Promise<SourceInfo | null> => {
    const src = await d.directory.get(sourceId);
    return src && src.orgId === orgId ? src : null;
  };
  const NOT_FOUND = callError('not_found', 'source not found');

  /** The call of a validated body (`sourceId`, `type` and `unset` dropped: `unset` is the journey
   * runtime's internal member of identify, never taken from a request). */
  const build = (at: { orgId: string; src: SourceInfo; sourceId: string; receivedAt: number }, kind: CallKind, body: any): IngestCall => {
    const { sourceId: _s, type: _t, unset: _u, ...rest } = body;
    return { id: callId(), kind, orgId: at.orgId, appId: at.src.appId, sourceId: at.sourceId, environment: at.src.environment, receivedAt: at.receivedAt, body: rest };
  };

  const settle = (calls: IngestCall[], results: CallResult[]) => {
    let tracks = 0;
    for (let i = 0; i < calls.length; i++) {
      const r = results[i]!;
      if (r.status >= 300) continue;
      d.activity.touch(calls[i]!.sourceId, calls[i]!.appId, calls[i]!.receivedAt);
      if (calls[i]!.kind === 'track' && r.status === 201) tracks++;
    }
    if (tracks) d.limits.count(calls[0]!.orgId, tracks);
  };

  /** Rate limit for the whole request; returns how many track calls the quota still admits. */
  const admit = async (req: Req, orgId: string, calls: number): Promise<number> => {
    const a = await d.limits.admit(req.principal.keyId ?? orgId, orgId, calls);
    if (!a.ok) throw new HttpError('rate_limited', 'too many requests for this API key', { 'retry-after': String(a.retryAfter) });
    return a.quotaLeft;
  };

  const single = (kind: CallKind): Handler<RouteAt<'POST', '/v1/identify' | '/v1/track'>> => async (req) => {
    const orgId = req.principal.orgId!;
    const data = req.body.data;
    const src = await sourceOf(orgId, data.sourceId);
    if (!src) return toReply(NOT_FOUND);
    const call = build({ orgId, src, sourceId: data.sourceId, receivedAt: Date.now() }, kind, data);
    const quotaLeft = await admit(req, orgId, 1);
    if (kind === 'track' && quotaLeft < 1) return toReply(OVER_QUOTA);
    const [result] = await d.stream.submit([call], { abandoned: () => req.aborted === true });
    settle([call], [result!]);
    return toReply(result!);
  };

  bind('POST', '/v1/identify', single('identify'));
  bind('POST', '/v1/track', single('track'));

  // Each call is judged on its own: validated with the identify/track validators, then all valid
  // calls go to the stream in one submit.
  bind('POST', '/v1/batch', async (req) => {
    const orgId = req.principal.orgId!;
    const { sourceId, calls } = req.body.data;
    const receivedAt = Date.now();
    const out: CallResult[] = new Array(calls.length);
    const pending: IngestCall[] = [];
    const slots: number[] = [];
    const quotaLeft = await admit(req, orgId, calls.length);
    // One source for the whole batch: looked up once, judged per call after its validation.
    const src = await sourceOf(orgId, sourceId);
    const at = src ? { orgId, src, sourceId, receivedAt } : undefined;
    let tracks = 0;
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i];
      const kind = c?.type;
      const refused = req.refused?.get(i);
      if (refused) { out[i] = callError('validation_failed', refused); continue; }
      if (kind !== 'identify' && kind !== 'track') { out[i] = callError('validation_failed', `body /data/calls/${i}/type: must be identify or track`); continue; }
      const { type: _t, ...data } = c;
      data.sourceId = sourceId;
      const v = d.validators[`${kind}_body`]!;
      if (!v({ data })) {
        out[i] = callError('validation_failed', validationMessage(v, 'body ', (p) => p.replace(/^\/data/, `/data/calls/${i}`)));
        continue;
      }
      if (!at) { out[i] = NOT_FOUND; continue; }
      if (kind === 'track' && ++tracks > quotaLeft) { out[i] = OVER_QUOTA; continue; }
      pending.push(build(at, kind, data));
      slots.push(i);
    }
    if (pending.length) {
      const results = await d.stream.submit(pending, { abandoned: () => req.aborted === true });
      settle(pending, results);
      slots.forEach((slot, k) => { out[slot] = results[k]!; });
    }
    return { status: 200, data: out.map((r) => ('error' in r ? { status: r.status, error: r.error } : { status: r.status, data: r.data })) };
  }, { items: '/data/calls' });
}
