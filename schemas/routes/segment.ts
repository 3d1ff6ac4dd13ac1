// The Segment-compatible routes under `/segment/v1` (Segment's tracking API, so Segment's SDKs send
// to headwater unmodified) and the write-key routes of a source. Their answers follow Segment's
// conventions, not headwater's envelope.
import { Type, type TSchema } from '@sinclair/typebox';
import type { TypedRoute } from '../route.js';
import { AnyObject } from '../common.js';

const Ok = Type.Object({ success: Type.Literal(true) }, { title: 'SegmentAccepted' });
const Refused = Type.Object(
  { success: Type.Literal(false), code: Type.String({ description: 'A headwater error code.' }), message: Type.String() },
  { title: 'SegmentRefused' },
);

const SegmentCall = Type.Object(
  {
    type: Type.Optional(Type.String({ description: 'identify | track | page | screen | group | alias; implied by the route outside a batch.' })),
    userId: Type.Optional(Type.Union([Type.String(), Type.Number()], { description: 'A number is taken as its decimal string.' })),
    anonymousId: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    messageId: Type.Optional(Type.String({ description: 'Dedup key, per (org, app) and permanent, as on `/v1/track`; generated when absent.' })),
    timestamp: Type.Optional(Type.String({ description: 'ISO 8601. Corrected for client clock skew with `sentAt`; an unparseable value is ignored (`receivedAt` is used).' })),
    sentAt: Type.Optional(Type.String()),
    context: Type.Optional(AnyObject()),
    integrations: Type.Optional(AnyObject()),
    traits: Type.Optional(AnyObject()),
    properties: Type.Optional(AnyObject()),
    event: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    category: Type.Optional(Type.String()),
    groupId: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    previousId: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    writeKey: Type.Optional(Type.String({ description: 'The write key, when no Authorization header carries it.' })),
  },
  { title: 'SegmentCall', description: 'One call of Segment\'s tracking API. `userId` or `anonymousId` is required (`userId` and `previousId` for alias). At most 32 KB.' },
);
const SegmentBatch = Type.Object(
  {
    batch: Type.Array(SegmentCall, { description: 'Each call carries its `type`.' }),
    sentAt: Type.Optional(Type.String({ description: 'Applies to calls without their own `sentAt`.' })),
    context: Type.Optional(AnyObject({ description: 'Merged under each call\'s own `context`.' })),
    integrations: Type.Optional(AnyObject({ description: 'Merged under each call\'s own `integrations`.' })),
    writeKey: Type.Optional(Type.String({ description: 'The write key, when no Authorization header carries it (mobile SDKs).' })),
  },
  { title: 'SegmentBatch', description: 'At most 500 KB.' },
);

const AUTH_TEXT =
  'Credential: a source write key (`POST /v1/sources/{id}/write-keys`), as `Authorization: Basic base64(writeKey + ":")` or as `writeKey` in the body. ' +
  'Any content type is parsed as JSON (the browser SDK sends `text/plain`). Answers are Segment\'s, not the envelope. ' +
  'CORS: every answer carries `Access-Control-Allow-Origin` (the request\'s origin when allowed; `HEADWATER_SEGMENT_CORS_ORIGINS`, default any), and `OPTIONS` on the same path answers the preflight ' +
  '(methods GET, POST, OPTIONS; headers authorization, content-type).';

const refused = (description: string) => ({ description, schema: Refused });
const ANSWERS = {
  200: { description: 'Accepted. A call the pipeline refuses on its own (a denied event, a bad trait, an over-quota track) is still answered 200, as Segment does, and kept with its reason in `segment_rejections`.', schema: Ok },
  400: refused('`malformed_request`: the body is not JSON, not an object, nests deeper than 64 levels, or is over 32 KB (a call) or 500 KB (a batch); or a single call cannot be mapped or breaks the schema of the identify or track it becomes (no `userId` / `anonymousId`, no `event`, an id over 200 characters, ...). Retrying cannot fix it; the SDKs drop it.'),
  401: refused('`invalid_key`: no write key, or an unknown or deleted one.'),
  403: refused('`forbidden`: the write key\'s source (or its app) is archived.'),
  429: refused('`rate_limited`: the write key\'s token bucket (the org\'s rate, as for an API key) is empty; `Retry-After` says when to come back.'),
  503: refused('`dependency_unavailable`: the ingestion stream or a store is unavailable; nothing was accepted, retry.'),
};

const MAPPING: Record<string, string> = {
  identify: 'An identify: identifiers `userId`, `anonymousId` and, when `traits.email` is a string, `email`; `traits` as traits.',
  track: 'A track of `event` with `properties`.',
  page: 'A track of `Page Viewed` with `properties` plus `name` and `category` when given.',
  screen: 'A track of `Screen Viewed` with `properties` plus `name` and `category` when given.',
  group: 'A track of `Group Identified` with the group\'s `traits` plus `groupId`, and an identify setting the trait `groupId` on the profile (messageId `<messageId>:group`).',
  alias: 'A merge of `previousId` into `userId`: an identify with identifiers `userId` and `anonymousId = previousId`, under the usual merge rules (two profiles holding different `userId` values never merge; `previousId` equal to `userId` is a no-op).',
};

const SHORT: Record<string, string> = { identify: 'i', track: 't', page: 'p', screen: 's', group: 'g', alias: 'a' };
const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);

type SegmentPath = `/segment/v1/${string}`;
type Raw<M extends TypedRoute['method'], P extends string, Pa extends TSchema | undefined = undefined> = TypedRoute<M, P, Pa, undefined, undefined>;

function post<P extends SegmentPath>(id: string, path: P, summary: string, description: string, rawBodySchema: TSchema = SegmentCall): Raw<'POST', P> {
  return {
    id, method: 'POST', path, tag: 'segment', auth: ['writeKey'], summary,
    description: `${description}\n\n${AUTH_TEXT}`, rawBody: '*/*', rawBodySchema, responses: ANSWERS,
  };
}

const preflight = <P extends SegmentPath, Pa extends TSchema | undefined = undefined>(id: string, path: P, params?: Pa): Raw<'OPTIONS', P, Pa> => ({
  id, method: 'OPTIONS', path, tag: 'segment', auth: ['none'], summary: 'CORS preflight', params,
  description: 'Answers 204 with `Access-Control-Allow-Origin` (the request\'s origin when allowed), `Access-Control-Allow-Methods: GET, POST, OPTIONS`, `Access-Control-Allow-Headers: authorization, content-type` and `Access-Control-Max-Age: 86400`.',
  responses: { 204: { description: 'The preflight answer (no body).' } },
});

const segmentCallRoutes: Raw<'POST', SegmentPath>[] = [];
for (const type of Object.keys(SHORT)) {
  const text = `${MAPPING[type]} Every call gets identity resolution, messageId dedup, governance, quarantine, quotas and segments as native calls do.`;
  segmentCallRoutes.push(post(`segment${cap(type)}`, `/segment/v1/${type}` as const, `Segment ${type}`, text));
  segmentCallRoutes.push(post(`segment${cap(type)}Short`, `/segment/v1/${SHORT[type]}` as const, `Segment ${type} (browser SDK's short path)`, text));
}
const BATCH_TEXT =
  'Calls of any type in one request; the batch\'s `context`, `integrations` and `sentAt` apply to each call that lacks its own. Each call is mapped as on its own route; ' +
  'a call that cannot be applied (no identity, over 32 KB, an unknown type, refused by governance) is kept in `segment_rejections` and the others go on: the answer is 200.';
segmentCallRoutes.push(post('segmentBatch', '/segment/v1/batch', 'Segment batch', BATCH_TEXT, SegmentBatch));
segmentCallRoutes.push(post('segmentBatchShort', '/segment/v1/b', 'Segment batch (browser SDK\'s batching mode)', BATCH_TEXT, SegmentBatch));
segmentCallRoutes.push({
  id: 'segmentMetrics', method: 'POST', path: '/segment/v1/m', tag: 'segment', auth: ['none'], summary: 'Browser SDK metrics (accepted and ignored)',
  description: 'The browser SDK posts its own delivery metrics here. Accepted without a credential and discarded.',
  rawBody: '*/*', responses: { 200: ANSWERS[200] },
});

const SettingsDoc = AnyObject({
  title: 'SegmentSettings',
  description: 'The subset of Segment\'s CDN settings the browser SDK needs: `integrations["Segment.io"]` with `apiKey` (the write key), `apiHost` (`<host>/segment/v1`, the host this request was sent to) and `protocol`; empty plans, middleware and remote plugins.',
});

const settingsParams = Type.Object({ writeKey: Type.String() });

const settings: Raw<'GET', '/segment/v1/projects/{writeKey}/settings', typeof settingsParams> = {
  id: 'segmentSettings', method: 'GET', path: '/segment/v1/projects/{writeKey}/settings', tag: 'segment', auth: ['none'],
  summary: 'Settings document for the browser SDK',
  description: 'What `@segment/analytics-next` fetches from `{cdnURL}/v1/projects/{writeKey}/settings` before it sends anything: load it with `cdnURL: "<host>/segment"`. The write key in the path authenticates.',
  params: settingsParams,
  responses: { 200: { description: 'The settings document.', schema: SettingsDoc }, 401: ANSWERS[401], 403: ANSWERS[403] },
};

export const segmentRoutes = [
  ...segmentCallRoutes,
  settings,
  ...[...segmentCallRoutes.map((r) => preflight(`${r.id}Preflight`, r.path))],
  preflight('segmentSettingsPreflight', '/segment/v1/projects/{writeKey}/settings', settingsParams),
];
