// Every route of the contract (interface.md "Endpoints" and decisions.md). The validators and the
// OpenAPI document are generated from this list by build.ts.
import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import type { ResponseDef, RouteDef } from './route.js';
import {
  AnyObject, Body, Data, DateTime, Environment, ErrorEnvelope, List, MapOf, Nullable, PageQuery,
  PageQueryProps, SearchPageQuery, StringEnum, TaggedUnion,
} from './common.js';
import {
  AppSchema, CreatedAppSchema, ArtifactSchema, BatchResultSchema, CatalogEventSchema, CatalogTraitSchema, DefinitionInputSchema,
  DeletedSchema, DroppedSchema, MessagingSchema, EmailSchema, EventSchema, ExecutionDetailSchema, ExecutionSchema, ExecutionStatus,
  GovernanceState, HealthLiveSchema, HealthReadySchema, IdentifierKind, IngestionPolicy, JourneySchema,
  ManifestInputSchema, OrgCreatedSchema, OrgUpdatedSchema, QUOTA_MEMBERS, ReconciliationSchema, PREDICATE_SEMANTICS, ProfileSchema, PromotedSchema, QuarantineEntrySchema,
  PushSchema, QuarantinedSchema, Role, SegmentMemberSchema, SegmentPreviewSchema, SegmentSchema,
  SegmentWithCountSchema, SessionSchema, SettingsSchema, RetentionSchema, LoginLinkSchema, RotatedCredentialSchema, SessionsRevokedSchema, SourceSchema, TypeName, UsersMeSchema,
  WebhookDeliverySchema, WebhookSchema, WriteKeySchema,
} from './resources.js';
import { JourneyJournalsSchema } from './journals.js';
import { segmentRoutes } from './segment-routes.js';
import { privacyRoutes } from './privacy-routes.js';
import { statsRoutes } from './stats-routes.js';
import { deployKeyMayCall } from './scope.js';

// ---------------------------------------------------------------- builder

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

function route(spec: Spec): RouteDef {
  const { ok, errors = {}, autoErrors, omit = [], ...def } = spec;
  if (def.auth.includes('deployKey') !== deployKeyMayCall(def.method, def.path)) {
    throw new Error(`${def.method} ${def.path}: its deployKey auth disagrees with DEPLOY_KEY_ROUTES (schemas/scope.ts, the contract's release lifecycle)`);
  }
  const responses: Record<number, ResponseDef> = { ...ok };
  if (autoErrors === false) return { ...def, responses };
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
  return { ...def, responses };
}

const json = (description: string, schema: TSchema): ResponseDef => ({ description, schema });
const Params = <K extends string>(...names: K[]) =>
  Type.Object(Object.fromEntries(names.map((n) => [n, Type.String()])) as Record<K, ReturnType<typeof Type.String>>);

// ---------------------------------------------------------------- request pieces

const Identifier = Type.String({ minLength: 1, maxLength: 200 });
const Identifiers = Type.Object(
  {
    anonymousId: Type.Optional(Identifier),
    userId: Type.Optional(Identifier),
    idpId: Type.Optional(Identifier),
    email: Type.Optional(Identifier),
  },
  {
    description:
      'At least one of `anonymousId`, `userId`, `idpId`, `email` (each 1 to 200 characters). Identity resolution: the profile is looked up by any of them; ' +
      'none found creates a profile, one found is updated and the new identifiers are attached, several found merge into the oldest ' +
      '(the others get `mergedInto`; identifiers, traits with newer values winning and event history follow the survivor). ' +
      'Two profiles holding different `userId` values are never merged; the call then lands on the profile of its `userId`.',
    anyOf: [{ required: ['anonymousId'] }, { required: ['userId'] }, { required: ['idpId'] }, { required: ['email'] }],
  },
);

/** Stored as a permanent dedup key (an index entry): bounded like identifier values. */
const MessageId = (description: string) => Type.String({ minLength: 1, maxLength: 200, description: `${description} 1 to 200 characters.` });

const IdentifyData = Type.Object(
  {
    sourceId: Type.String({ minLength: 1, description: 'The write is attributed to this source\'s parent app.' }),
    identifiers: Identifiers,
    traits: Type.Optional(AnyObject({
      // Trait names become catalog names (1 to 200 characters, interface.md "Limits").
      propertyNames: { minLength: 1, maxLength: 200 },
      description:
        'Any members, named with 1 to 200 characters (trait names are catalog names). `consent`, when an object of booleans, is merged into `profile.consent` and not stored as a trait. ' +
        'Canonical validations (the only source of `trait_validation_failed`): `email` an e-mail address; `phone` E.164; ' +
        '`createdAt` ISO 8601 date-time; `birthday` ISO 8601 date; `website` and `avatar` absolute http(s) URLs; `age` a number from 0 to 150.',
    })),
    timestamp: Type.Optional(DateTime),
    messageId: Type.Optional(MessageId('When given, dedups like a track `messageId`.')),
  },
  { title: 'IdentifyData' },
);

const TrackData = Type.Object(
  {
    sourceId: Type.String({ minLength: 1, description: 'The write is attributed to this source\'s parent app.' }),
    identifiers: Identifiers,
    event: Type.String({ minLength: 1, maxLength: 200 }),
    properties: Type.Optional(AnyObject()),
    timestamp: Type.Optional(Type.String({ format: 'date-time', description: 'Defaults to `receivedAt`.' })),
    messageId: MessageId('Dedup key, per (org, app) and permanent.'),
    context: Type.Optional(AnyObject({
      description: 'Where the call came from (`library`, `page`, `userAgent`, `ip`, ...): kept with the event as sent (`Event.context`), outside the tracking plan (no catalog entry, no governance).',
    })),
  },
  { title: 'TrackData' },
);

const INGESTION_ERRORS = {
  403: '`forbidden`: the `sourceId` names an archived source.',
  404: '`not_found`: the `sourceId` is unknown or belongs to another org.',
  429: '`rate_limited`: the per-API-key token bucket is empty (a `Retry-After` header is sent). `over_quota`: the org\'s monthly event quota is used up.',
};

const CatalogName = Type.String({ minLength: 1, maxLength: 200 });
const CatalogQuery = Type.Object({ ...SearchPageQuery.properties, state: Type.Optional(GovernanceState) });
const QuarantineBody = Body(Type.Object({ kind: StringEnum(['event', 'trait'] as const), name: Type.String({ minLength: 1 }) }));

const AppName = Type.String({ minLength: 1, maxLength: 100 });
const SourceCreateData = TaggedUnion('kind', [
  Type.Object({ kind: Type.Literal('api'), config: Type.Optional(AnyObject({ default: {} })) }, { title: 'ApiSourceInput' }),
  Type.Object(
    {
      kind: Type.Literal('idp'),
      config: Type.Optional(Type.Object(
        { signingSecret: Type.Optional(Type.String({ minLength: 1, description: 'Write-only. `whsec_` + base64 (Standard Webhooks / Svix).' })) },
        { default: {} },
      )),
    },
    { title: 'IdpSourceInput' },
  ),
]);

const SegmentName = Type.String({ minLength: 1, maxLength: 100 });
const Environments = Type.Array(Environment, { minItems: 1 });

const WebhookUrl = Type.String({
  format: 'uri',
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
  description: 'An http(s) URL (any other scheme is 422 `validation_failed`). At delivery the host is resolved and every address checked: loopback, private, link-local (cloud metadata), unique-local, carrier-grade NAT, multicast and unspecified targets are refused, which fails the delivery with the reason in `lastError` and sends nothing, unless the operator allows them (`HEADWATER_WEBHOOK_ALLOW_PRIVATE=true`). Redirects are never followed.',
});
const WebhookName = Type.String({ minLength: 1, maxLength: 100, description: 'Unique per org; journeys reference the webhook by this name.' });

const Digest = Type.Object({ digest: Type.String({ pattern: '^[0-9a-f]{64}$', description: '64 lowercase hex characters: the sha256 of the bytes.' }) });
const Filter = Type.String({ minLength: 1, maxLength: 200 });

const SvixHeaders = Type.Object({
  'svix-id': Type.Optional(Type.String()),
  'svix-timestamp': Type.Optional(Type.String()),
  'svix-signature': Type.Optional(Type.String()),
  'webhook-id': Type.Optional(Type.String({ description: 'Alternative name of `svix-id`.' })),
  'webhook-timestamp': Type.Optional(Type.String({ description: 'Alternative name of `svix-timestamp`.' })),
  'webhook-signature': Type.Optional(Type.String({ description: 'Alternative name of `svix-signature`.' })),
});

const IdpEvent = Type.Object(
  {
    type: StringEnum(['user.created', 'user.updated', 'user.deleted'] as const),
    data: Type.Object({
      id: Type.String(),
      email_addresses: Type.Optional(Type.Array(Type.Object({ email_address: Type.String() }))),
      first_name: Type.Optional(Nullable(Type.String())),
      last_name: Type.Optional(Nullable(Type.String())),
    }),
  },
  { title: 'IdpUserEvent' },
);

const text = (description: string): ResponseDef => ({ description, contentType: 'text/plain', schema: Type.String() });
const none = (description: string): ResponseDef => ({ description });

// ---------------------------------------------------------------- routes

export const routes: RouteDef[] = [
  // ------------------------------------------------------------ health
  route({
    id: 'healthLive', method: 'GET', path: '/health/live', tag: 'health', auth: ['none'],
    summary: 'Liveness probe',
    ok: { 200: json('The process is up.', Data(HealthLiveSchema)) },
  }),
  route({
    id: 'healthReady', method: 'GET', path: '/health/ready', tag: 'health', auth: ['none'],
    summary: 'Readiness probe',
    description: 'Checks each configured dependency by name (`postgres`, `clickhouse`, `nats`) and names the HTTP front end serving (`frontEnd`: `uws`, or `node:http` where no uWebSockets.js build loads or `HEADWATER_FRONT_END=node`).',
    ok: { 200: json('Every configured dependency answers.', Data(HealthReadySchema)) },
    errors: { 503: '`dependency_unavailable`: a configured dependency does not answer.' },
  }),
  route({
    id: 'openapi', method: 'GET', path: '/openapi.json', tag: 'health', auth: ['none'],
    summary: 'This OpenAPI 3.1 document',
    description: 'Not wrapped in the envelope.',
    ok: { 200: json('The OpenAPI 3.1 document describing this contract.', AnyObject()) },
  }),

  route({
    id: 'metrics', method: 'GET', path: '/metrics', tag: 'operator', auth: ['operator'],
    summary: 'Prometheus metrics of this process',
    description: 'Prometheus text exposition format (prom-client). Operator token only; with `HEADWATER_METRICS_PORT` set, ' +
      'the same text is also served without a credential on that port (`headwater worker` processes serve theirs only there). ' +
      'Request rates and latencies per route, calls by outcome, the ingestion backlog and refusals, stream lag, worker-pool ' +
      'utilization, batch and insert latencies, Postgres pool waits, runner and outbox backlogs, purposeful drops. docs/scaling.md says which to watch.',
    ok: { 200: text('Metrics in the Prometheus text format.') },
  }),

  // ------------------------------------------------------------ ingestion
  route({
    id: 'identify', method: 'POST', path: '/v1/identify', tag: 'ingestion', auth: ['apiKey'],
    summary: 'Create or merge a profile',
    description:
      'Profiles are scoped to (org, app); the app is the parent app of `sourceId` and the profile\'s environment is the app\'s. ' +
      'Deny-list: a denied trait name is 422 `trait_denied` and nothing of the call is written. Under the `strict` policy, traits whose names are not in the catalog are held ' +
      '(quarantine), the rest applied, and the Profile is returned without them. Under `permissive` (default) unknown trait names are registered as `allowed`. ' +
      'Identify calls do not count toward the monthly quota. Every successful write updates `lastReceivedAt` of its source and app and recomputes segment memberships before answering.',
    body: Body(IdentifyData),
    ok: { 200: json('The Profile.', Data(ProfileSchema)) },
    errors: { ...INGESTION_ERRORS, 422: '`trait_validation_failed`: a canonical trait has a bad format (the message names the trait). `trait_denied`: a trait name is denied.' },
  }),
  route({
    id: 'track', method: 'POST', path: '/v1/track', tag: 'ingestion', auth: ['apiKey'],
    summary: 'Record one event',
    description:
      'Resolves the profile like identify, then writes the event. `messageId` dedup is per (org, app) and permanent: a replay answers 200 with the original Event even if its body differs ' +
      '(a replay of a held event answers the quarantined answer). Under `strict`, an event name not in the catalog is held whole and answered 200 `{ data: { status: "quarantined" } }`. ' +
      'A denied event name is 422 `event_denied` and nothing is written. Accepted track calls count toward the monthly quota.',
    body: Body(TrackData),
    ok: {
      201: json('The written Event.', Data(EventSchema)),
      200: json('The original Event (deduplicated replay) or `{ status: "quarantined" }` (held under the strict policy).', Data(Type.Union([EventSchema, QuarantinedSchema]))),
    },
    errors: { ...INGESTION_ERRORS, 422: '`event_denied`: the event name is denied. `trait_validation_failed` / `trait_denied` do not apply to track.' },
  }),
  route({
    id: 'batch', method: 'POST', path: '/v1/batch', tag: 'ingestion', auth: ['apiKey'],
    summary: 'Identify and track calls in one request',
    description:
      'For SDKs. `data.calls` holds 1 to 500 calls, each `{ type: "identify" | "track", ...call }` where `call` is the `data` of `/v1/identify` or `/v1/track` without `sourceId` ' +
      '(the batch `sourceId` applies to all). Each call is judged on its own, in order: the answer holds one result per call, `{ status, data }` or `{ status, error }`, ' +
      '`status` being the HTTP status the call would have had alone (200, 201, 403, 422, 429 ...). A call that is not a valid identify or track gets status 422 `validation_failed`.',
    body: Body(Type.Object({
      sourceId: Type.String({ minLength: 1 }),
      calls: Type.Array(AnyObject({ title: 'BatchCall', description: '`{ type: "identify" | "track", ...call }`; validated on its own.' }), { minItems: 1, maxItems: 500 }),
    })),
    ok: { 200: json('One result per call, in order.', Data(Type.Array(BatchResultSchema))) },
    errors: INGESTION_ERRORS,
  }),

  // ------------------------------------------------------------ catalog
  route({
    id: 'catalogEventsCreate', method: 'POST', path: '/v1/catalog/events', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Register a catalog event',
    body: Body(Type.Object({ name: CatalogName, properties: Type.Optional(MapOf(TypeName, { default: {}, description: 'Property name to type name.' })) })),
    ok: { 201: json('The registered event, state `allowed`.', Data(CatalogEventSchema)) },
    errors: { 409: '`conflict`: an event of that name is already registered.' },
  }),
  route({
    id: 'catalogEventsList', method: 'GET', path: '/v1/catalog/events', tag: 'catalog', auth: ['session'],
    summary: 'List catalog events',
    query: CatalogQuery,
    ok: { 200: json('A page of catalog events.', List(CatalogEventSchema)) },
  }),
  route({
    id: 'catalogEventsGet', method: 'GET', path: '/v1/catalog/events/{name}', tag: 'catalog', auth: ['session'],
    summary: 'Fetch a catalog event',
    params: Type.Object({ name: CatalogName }),
    ok: { 200: json('The catalog event.', Data(CatalogEventSchema)) },
  }),
  route({
    id: 'catalogEventsUpdate', method: 'PATCH', path: '/v1/catalog/events/{name}', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Replace a catalog event\'s property types',
    params: Type.Object({ name: CatalogName }),
    body: Body(Type.Object({ properties: MapOf(TypeName, { description: 'Property name to type name.' }) })),
    ok: { 200: json('The catalog event.', Data(CatalogEventSchema)) },
  }),
  route({
    id: 'catalogEventsSetState', method: 'POST', path: '/v1/catalog/events/{name}/state', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Allow or deny a catalog event',
    description: 'Denied always wins at ingestion: a denied event name on track is 422 `event_denied`.',
    params: Type.Object({ name: CatalogName }),
    body: Body(Type.Object({ state: GovernanceState })),
    ok: { 200: json('The catalog event.', Data(CatalogEventSchema)) },
  }),
  route({
    id: 'catalogTraitsCreate', method: 'POST', path: '/v1/catalog/traits', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Register a catalog trait',
    body: Body(Type.Object({ name: CatalogName, type: TypeName })),
    ok: { 201: json('The registered trait, state `allowed`.', Data(CatalogTraitSchema)) },
    errors: { 409: '`conflict`: a trait of that name is already registered.' },
  }),
  route({
    id: 'catalogTraitsList', method: 'GET', path: '/v1/catalog/traits', tag: 'catalog', auth: ['session'],
    summary: 'List catalog traits',
    query: CatalogQuery,
    ok: { 200: json('A page of catalog traits.', List(CatalogTraitSchema)) },
  }),
  route({
    id: 'catalogTraitsGet', method: 'GET', path: '/v1/catalog/traits/{name}', tag: 'catalog', auth: ['session'],
    summary: 'Fetch a catalog trait',
    params: Type.Object({ name: CatalogName }),
    ok: { 200: json('The catalog trait.', Data(CatalogTraitSchema)) },
  }),
  route({
    id: 'catalogTraitsUpdate', method: 'PATCH', path: '/v1/catalog/traits/{name}', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Change a catalog trait\'s type',
    params: Type.Object({ name: CatalogName }),
    body: Body(Type.Object({ type: TypeName })),
    ok: { 200: json('The catalog trait.', Data(CatalogTraitSchema)) },
  }),
  route({
    id: 'catalogTraitsSetState', method: 'POST', path: '/v1/catalog/traits/{name}/state', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Allow or deny a catalog trait',
    description: 'Denied always wins at ingestion: a denied trait name on identify is 422 `trait_denied`.',
    params: Type.Object({ name: CatalogName }),
    body: Body(Type.Object({ state: GovernanceState })),
    ok: { 200: json('The catalog trait.', Data(CatalogTraitSchema)) },
  }),
  route({
    id: 'catalogQuarantineList', method: 'GET', path: '/v1/catalog/quarantine', tag: 'catalog', auth: ['session'],
    summary: 'List the quarantine queue',
    description: 'One entry per held name with how many values it holds, ordered by kind then name (byte order). Names leave the queue when promoted or denied.',
    query: PageQuery,
    ok: { 200: json('A page of held names.', List(QuarantineEntrySchema)) },
  }),
  route({
    id: 'catalogQuarantinePromote', method: 'POST', path: '/v1/catalog/quarantine/promote', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Promote a quarantined name',
    description: 'Allow-lists the held name in the catalog and applies its held values in arrival order (events written, traits set). Answers how many were applied (0 when nothing is held).',
    body: QuarantineBody,
    ok: { 200: json('How many held values were applied.', Data(PromotedSchema)) },
  }),
  route({
    id: 'catalogQuarantineDeny', method: 'POST', path: '/v1/catalog/quarantine/deny', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Deny a quarantined name',
    description: 'Denies the name in the catalog and drops its held values. Answers how many were dropped (0 when nothing is held).',
    body: QuarantineBody,
    ok: { 200: json('How many held values were dropped.', Data(DroppedSchema)) },
  }),

  // ------------------------------------------------------------ apps and sources
  route({
    id: 'appsCreate', method: 'POST', path: '/v1/apps', tag: 'apps', auth: ['session'], admin: true,
    summary: 'Create an app',
    description: 'Every app is created together with its first-party `api` source; the answer lists it in `sources` (its `id` is the `sourceId` of ingestion calls).',
    body: Body(Type.Object({ name: AppName, environment: Type.Optional(StringEnum(['development', 'production'] as const, { default: 'production' })) })),
    ok: { 201: json('The App with its default source.', Data(CreatedAppSchema)) },
  }),
  route({
    id: 'appsList', method: 'GET', path: '/v1/apps', tag: 'apps', auth: ['session'],
    summary: 'List apps',
    query: Type.Object({ ...SearchPageQuery.properties, status: Type.Optional(StringEnum(['active', 'archived', 'all'] as const, { default: 'all' })) }),
    ok: { 200: json('A page of apps.', List(AppSchema)) },
  }),
  route({
    id: 'appsGet', method: 'GET', path: '/v1/apps/{id}', tag: 'apps', auth: ['session'],
    summary: 'Fetch an app',
    params: Params('id'),
    ok: { 200: json('The App.', Data(AppSchema)) },
  }),
  route({
    id: 'appsUpdate', method: 'PATCH', path: '/v1/apps/{id}', tag: 'apps', auth: ['session'], admin: true,
    summary: 'Rename or archive an app',
    description: '`status` accepts only `archived` (sets `archivedAt`); there is no route back to active.',
    params: Params('id'),
    body: Body(Type.Object({ name: Type.Optional(AppName), status: Type.Optional(StringEnum(['archived'] as const)) })),
    ok: { 200: json('The App.', Data(AppSchema)) },
  }),
  route({
    id: 'appSourcesCreate', method: 'POST', path: '/v1/apps/{appId}/sources', tag: 'apps', auth: ['session'], admin: true,
    summary: 'Create a source under an app',
    description: 'An `api` source is a first-party ingestion pipe; an `idp` source receives identity-provider webhooks at `POST /v1/sources/{sourceId}/webhook`. The signing secret is write-only.',
    params: Params('appId'),
    body: Body(SourceCreateData),
    ok: { 201: json('The Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'appSourcesList', method: 'GET', path: '/v1/apps/{appId}/sources', tag: 'apps', auth: ['session'],
    summary: 'List an app\'s sources',
    params: Params('appId'),
    query: PageQuery,
    ok: { 200: json('A page of sources.', List(SourceSchema)) },
  }),
  route({
    id: 'sourcesGet', method: 'GET', path: '/v1/sources/{id}', tag: 'sources', auth: ['session'],
    summary: 'Fetch a source',
    params: Params('id'),
    ok: { 200: json('The Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'sourcesUpdate', method: 'PATCH', path: '/v1/sources/{id}', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Set or rotate a source\'s config',
    description: 'Replaces `config`. A `signingSecret` inside it is write-only; `configured` reports whether one is stored.',
    params: Params('id'),
    body: Body(Type.Object({ config: Type.Unknown({ description: 'Any JSON value.' }) })),
    ok: { 200: json('The Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'sourcesDelete', method: 'DELETE', path: '/v1/sources/{id}', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Archive a source',
    description: 'Sets `archivedAt`. Calls carrying the archived source id are refused with 403; ingestion resumes only through a fresh `api` source with a new id.',
    params: Params('id'),
    ok: { 200: json('The archived Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'sourcesWebhook', method: 'POST', path: '/v1/sources/{sourceId}/webhook', tag: 'sources', auth: ['signature'],
    summary: 'Identity-provider webhook receiver',
    description:
      'Public: no bearer. Accepts identity-provider user events signed with the Standard Webhooks / Svix scheme: headers `svix-id`, `svix-timestamp`, `svix-signature` ' +
      '(or the `webhook-*` names); secret = the source\'s `config.signingSecret` (`whsec_` + base64); timestamp tolerance 5 minutes. ' +
      '`user.created` / `user.updated` identify the profile with `idpId = data.id` (and `email` from the first e-mail address), setting traits `email`, `firstName`, `lastName`; ' +
      '`user.deleted` sets trait `deleted = true`. A source with no secret configured refuses every call with 401. Answers are plain text, not the envelope.',
    params: Params('sourceId'),
    headers: SvixHeaders,
    rawBody: 'application/json',
    rawBodySchema: IdpEvent,
    autoErrors: false,
    ok: {
      200: text('`ok`'),
      400: text('`bad payload` (also for a message id over 192 characters: it becomes the call\'s messageId)'),
      401: text('`invalid signature` (also when the source has no secret configured)'),
      403: text('`source archived`'),
      404: text('`unknown source`'),
    },
  }),
  route({
    id: 'writeKeysCreate', method: 'POST', path: '/v1/sources/{id}/write-keys', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Create a write key for a source',
    description:
      'A write key is the credential of Segment\'s SDKs (`/segment/v1/...`): valid only there and only into this source, public by nature. ' +
      'A source may have several live keys, so a key can be rotated without a gap. The key appears in this answer only (only its sha256 is stored). ' +
      'The body may be empty or `{ "data": {} }`.',
    params: Params('id'),
    body: Body(Type.Object({})),
    optionalBody: true,
    ok: { 201: json('The WriteKey, `writeKey` included.', Data(WriteKeySchema)) },
    errors: { 409: '`conflict`: the source is archived.' },
  }),
  route({
    id: 'writeKeysList', method: 'GET', path: '/v1/sources/{id}/write-keys', tag: 'sources', auth: ['session'],
    summary: 'List a source\'s live write keys',
    description: 'Oldest first. `writeKey` is null (only its hash is stored); `prefix` tells keys apart.',
    params: Params('id'),
    ok: { 200: json('The live write keys.', Data(Type.Array(WriteKeySchema))) },
  }),
  route({
    id: 'writeKeysDelete', method: 'DELETE', path: '/v1/sources/{id}/write-keys/{keyId}', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Delete a write key',
    description: 'Every front end refuses the key (401) within a second.',
    params: Params('id', 'keyId'),
    ok: { 200: json('Deleted.', Data(DeletedSchema)) },
  }),

  // ------------------------------------------------------------ segments
  route({
    id: 'segmentsCreate', method: 'POST', path: '/v1/segments', tag: 'segments', auth: ['session'], admin: true,
    summary: 'Create a segment',
    description: 'Computes membership immediately over existing profiles (`memberCount` is exact); each resulting entry emits `system.segment_entered`. ' + PREDICATE_SEMANTICS,
    body: Body(Type.Object({
      name: SegmentName,
      description: Type.Optional(Nullable(Type.String())),
      definition: DefinitionInputSchema,
      environments: Type.Optional(Type.Array(Environment, { minItems: 1, default: ['development', 'production'] })),
    })),
    ok: { 201: json('The Segment with its member count.', Data(SegmentWithCountSchema)) },
  }),
  route({
    id: 'segmentsPreview', method: 'POST', path: '/v1/segments/preview', tag: 'segments', auth: ['session'],
    summary: 'Preview a draft definition',
    description: 'Evaluates a definition without storing it (not a mutation: `org:member` may call it). Scans at most 10,000 profiles (configurable); `truncated` says whether it stopped early. ' + PREDICATE_SEMANTICS,
    body: Body(DefinitionInputSchema),
    ok: { 200: json('The preview.', Data(SegmentPreviewSchema)) },
  }),
  route({
    id: 'segmentsList', method: 'GET', path: '/v1/segments', tag: 'segments', auth: ['session'],
    summary: 'List segments',
    description: 'Newest first; `q` matches the name case-insensitively as a substring. Segment names need not be unique.',
    query: SearchPageQuery,
    ok: { 200: json('A page of segments (without `memberCount`).', List(SegmentSchema)) },
  }),
  route({
    id: 'segmentsGet', method: 'GET', path: '/v1/segments/{id}', tag: 'segments', auth: ['session'],
    summary: 'Fetch a segment',
    params: Params('id'),
    ok: { 200: json('The Segment with its member count.', Data(SegmentWithCountSchema)) },
  }),
  route({
    id: 'segmentsUpdate', method: 'PATCH', path: '/v1/segments/{id}', tag: 'segments', auth: ['session'], admin: true,
    summary: 'Update a segment',
    description: 'Every member optional; a given `definition` replaces the old one whole (its `predicates` are required). Membership is recomputed immediately and transitions emit events.',
    params: Params('id'),
    body: Body(Type.Object({
      name: Type.Optional(SegmentName),
      description: Type.Optional(Nullable(Type.String())),
      definition: Type.Optional(DefinitionInputSchema),
      environments: Type.Optional(Environments),
    })),
    ok: { 200: json('The Segment with its member count.', Data(SegmentWithCountSchema)) },
  }),
  route({
    id: 'segmentsDelete', method: 'DELETE', path: '/v1/segments/{id}', tag: 'segments', auth: ['session'], admin: true,
    summary: 'Delete a segment',
    description: 'Removes the segment and its memberships without emitting `system.segment_exited`.',
    params: Params('id'),
    ok: { 200: json('Deleted.', Data(DeletedSchema)) },
  }),
  route({
    id: 'segmentsMembers', method: 'GET', path: '/v1/segments/{id}/members', tag: 'segments', auth: ['session'],
    summary: 'List a segment\'s members',
    description: 'Ordered by profile id. Merged-away profiles are never members.',
    params: Params('id'),
    query: PageQuery,
    ok: { 200: json('A page of members.', List(SegmentMemberSchema)) },
  }),

  // ------------------------------------------------------------ executions
  route({
    id: 'executionsList', method: 'GET', path: '/v1/executions', tag: 'executions', auth: ['session', 'deployKey'],
    summary: 'List executions, newest first',
    query: Type.Object({
      ...PageQueryProps,
      journey: Type.Optional(Filter),
      release: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A push id (`releaseId`).' })),
      status: Type.Optional(ExecutionStatus),
      profileId: Type.Optional(Filter),
      since: Type.Optional(Type.String({ format: 'date-time', description: 'Executions started at or after this instant.' })),
      converted: Type.Optional(Type.Boolean({ description: 'Only executions that converted on their journey\'s goal (true) or did not (false).' })),
      holdout: Type.Optional(Type.Boolean({ description: 'Only the held-out executions (true) or only the others (false).' })),
      exitReason: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'Only executions that ended for this reason: `event:<name>` (an exit rule) or `goal`.' })),
    }),
    ok: { 200: json('A page of executions, newest first.', List(ExecutionSchema)) },
  }),
  route({
    id: 'executionsGet', method: 'GET', path: '/v1/executions/{id}', tag: 'executions', auth: ['session', 'deployKey'],
    summary: 'Fetch an execution with its journal and logs',
    description: 'The execution record is kept beyond its workflow\'s retention window.',
    params: Params('id'),
    ok: { 200: json('The execution with `journal` and `logs`.', Data(ExecutionDetailSchema)) },
  }),
  route({
    id: 'executionsCancel', method: 'POST', path: '/v1/executions/{id}/cancel', tag: 'executions', auth: ['session', 'deployKey'], admin: true,
    summary: 'Cancel a running or waiting execution',
    description: 'Session with `org:admin`, or a deploy key. A `running` or `waiting` execution becomes `cancelled`: its timer and wait are dropped and `endedAt` is set; an activation in progress finishes, but its outcome is discarded. Effects it already handed over (e-mail, webhooks, writes) are not undone. The body may be empty or `{ "data": {} }`.',
    params: Params('id'),
    body: Body(Type.Object({})),
    optionalBody: true,
    ok: { 200: json('The cancelled Execution.', Data(ExecutionSchema)) },
    errors: { 409: '`conflict`: the execution already ended (`completed`, `failed` or `cancelled`).' },
  }),
  route({
    id: 'journeysJournals', method: 'GET', path: '/v1/journeys/{key}/journals', tag: 'executions', auth: ['session', 'pipelineKey'],
    summary: 'Journals of a journey\'s latest executions',
    description: 'For the replay check of the project tool (`headwater replay`, `headwater push --check`): the latest `limit` executions of the journey, newest first, ' +
      'each with its trigger event, run id, journal and pending wait, so a local build can be replayed against them. Session of any role, or the org pipeline key (CI).',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    query: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Executions to answer, 1 to 1000 (default 100).' })) }),
    ok: { 200: json('The journey\'s journals.', Data(JourneyJournalsSchema)) },
  }),

  // ------------------------------------------------------------ artifacts
  route({
    id: 'artifactsHead', method: 'HEAD', path: '/v1/artifacts/{digest}', tag: 'artifacts', auth: ['session', 'deployKey', 'pipelineKey'],
    summary: 'Does the org have this artifact?',
    description: 'Answered from the stored size, without reading the bytes. No body in any answer. Accepts a session (any role), the org deploy key or the org pipeline key.',
    params: Digest,
    autoErrors: false,
    ok: {
      200: none('The org has the artifact; `content-length` is its size.'),
      401: none('`invalid_key` (no body).'),
      404: none('The org does not have the artifact.'),
      422: none('The digest is not 64 lowercase hex characters (no body).'),
    },
  }),
  route({
    id: 'artifactsPut', method: 'PUT', path: '/v1/artifacts/{digest}', tag: 'artifacts', auth: ['session', 'deployKey', 'pipelineKey'],
    summary: 'Upload an artifact',
    description:
      'The body is the raw bytes (any content type; `content-length` or chunked framing); they must hash (sha256) to the digest, which is checked on every upload, also when the org already has the artifact. ' +
      'The body is streamed to storage as it arrives and never held whole; the artifact size limit (default 32 MiB, `HEADWATER_ARTIFACT_LIMIT`) replaces the global body limit and is answered (413) as soon as it is passed. ' +
      'Artifacts are immutable and deduplicated within an org: a digest is stored once (concurrent uploads of one digest included) and keeps the `kind` of its first upload; another org\'s artifacts are invisible. ' +
      'Accepts a session (any role), the org deploy key or the org pipeline key.',
    params: Digest,
    query: Type.Object({ kind: StringEnum(['bundle', 'source'] as const) }),
    rawBody: 'application/octet-stream',
    omit: [404],
    ok: {
      201: json('Stored.', Data(ArtifactSchema)),
      200: json('Already present.', Data(ArtifactSchema)),
    },
    errors: {
      413: '`artifact_too_large`: the bytes exceed the artifact limit (default 32 MiB).',
      422: '`validation_failed`: the bytes do not hash to the digest.',
    },
  }),

  // ------------------------------------------------------------ pushes
  route({
    id: 'pushesCreate', method: 'POST', path: '/v1/pushes', tag: 'pushes', auth: ['session', 'pipelineKey'],
    summary: 'Push a project',
    description:
      'Stores the project\'s manifest and files a new version of every journey and template whose `bundle` differs from the latest version of that key (keys are unique per org and kind); ' +
      'an unchanged key gets none. Returns once stored; versions then compile asynchronously, each on its own. A push turns nothing on: enabling is `PATCH /v1/journeys/{key}`. ' +
      '`bundle` and `source` digests must name stored artifacts of the org, `appId` an active app of the org, `orgId` the org of the credential, and keys must be unique per kind within the manifest, ' +
      'else 422 `validation_failed` naming each offending field (JSON pointer). A push whose bundles are all unchanged is still recorded, with no versions (`totalEntries` 0). ' +
      'Accepts a session (any role) or the org pipeline key; `createdBy` is the session\'s user id or `pipelineKey`, `createdByScheme` the credential kind and `createdByRole` the session\'s role (null for the pipeline key). ' +
      'A ready version of an enabled journey runs at once whoever pushed it: the service logs `journey version live` with the journey, version, push and author. ' +
      'Compilation: each version\'s bundle (an ES module, self-contained, default-exporting the definition) is loaded once in a sandbox (memory cap, 2 s load deadline); ' +
      'it becomes `ready` with a `moduleDigest` when its default export is a definition of the entry\'s kind and key, else `failed` with `error` saying why. One failing version costs only its own key.',
    body: Body(Type.Object({
      manifest: ManifestInputSchema,
      appId: Type.String({ maxLength: 200 }),
      orgId: Type.String({ maxLength: 200 }),
    })),
    ok: { 201: json('The Push with its versions.', Data(PushSchema)) },
  }),
  route({
    id: 'pushesList', method: 'GET', path: '/v1/pushes', tag: 'pushes', auth: ['session'],
    summary: 'List pushes, newest first',
    description: 'Each push with its versions. `appId` keeps the pushes of that app.',
    query: Type.Object({ ...PageQueryProps, appId: Type.Optional(Type.String({ maxLength: 200 })) }),
    ok: { 200: json('A page of pushes, newest first.', List(PushSchema)) },
  }),
  route({
    id: 'pushesGet', method: 'GET', path: '/v1/pushes/{id}', tag: 'pushes', auth: ['session'],
    summary: 'Fetch a push with its versions',
    params: Params('id'),
    ok: { 200: json('The Push.', Data(PushSchema)) },
  }),
  route({
    id: 'pushesSource', method: 'GET', path: '/v1/pushes/{id}/source', tag: 'pushes', auth: ['session'],
    summary: 'Download a push\'s source archive',
    description: 'The stored source artifact, byte for byte, as `application/gzip` (`x-content-digest: sha256=<digest>`).',
    params: Params('id'),
    ok: {
      200: {
        description: 'The stored source artifact (a gzip tarball).',
        contentType: 'application/gzip',
        schema: Type.Unsafe<string>({ type: 'string', contentMediaType: 'application/gzip' }),
      },
    },
  }),

  // ------------------------------------------------------------ webhooks
  route({
    id: 'webhooksCreate', method: 'POST', path: '/v1/webhooks', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Register a webhook',
    description:
      'The answer carries `signingSecret` (`whsec_` + base64 of 32 random bytes), shown only here; the service keeps it encrypted. ' +
      'Deliveries follow Standard Webhooks: a POST of `{ v: 1, id, type, timestamp, data }` (`type` `journey.webhook` for journey sends, `webhook.test` for test sends) with the headers ' +
      '`webhook-id` (the delivery id, the same on every retry), `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed by the base64-decoded secret after `whsec_`). ' +
      'A 2xx answer is success; anything else (3xx included: redirects are not followed), a network error or a timeout (15 s by default) is a failed attempt. ' +
      'Failed attempts are retried with exponential backoff and jitter (5 attempts by default; a 429 or 503 `Retry-After` is honoured). ' +
      'After 5 consecutive failed deliveries (configurable) the webhook disables itself (`disabledAt` set) and its deliveries are recorded `skipped_disabled` until `PATCH` with `enabled: true`. ' +
      'Names are unique per org (journeys reference a webhook by name).',
    body: Body(Type.Object({ name: WebhookName, config: Type.Object({ url: WebhookUrl }) })),
    ok: { 201: json('The Webhook including `signingSecret`.', Data(WebhookSchema)) },
    errors: { 409: '`conflict`: a webhook of that name exists.' },
  }),
  route({
    id: 'webhooksList', method: 'GET', path: '/v1/webhooks', tag: 'webhooks', auth: ['session'],
    summary: 'List webhooks',
    query: SearchPageQuery,
    ok: { 200: json('A page of webhooks.', List(WebhookSchema)) },
  }),
  route({
    id: 'webhooksGet', method: 'GET', path: '/v1/webhooks/{id}', tag: 'webhooks', auth: ['session'],
    summary: 'Fetch a webhook',
    params: Params('id'),
    ok: { 200: json('The Webhook.', Data(WebhookSchema)) },
  }),
  route({
    id: 'webhooksUpdate', method: 'PATCH', path: '/v1/webhooks/{id}', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Update, enable or disable a webhook',
    description: '`enabled: true` re-enables an (auto-)disabled webhook and resets its failure count; `enabled: false` disables it.',
    params: Params('id'),
    body: Body(Type.Object({
      name: Type.Optional(WebhookName),
      config: Type.Optional(Type.Object({ url: WebhookUrl })),
      enabled: Type.Optional(Type.Boolean()),
    })),
    ok: { 200: json('The Webhook.', Data(WebhookSchema)) },
    errors: { 409: '`conflict`: a webhook of that name exists.' },
  }),
  route({
    id: 'webhooksDelete', method: 'DELETE', path: '/v1/webhooks/{id}', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Delete a webhook',
    description: 'Its deliveries go with it; a pending one is not sent.',
    params: Params('id'),
    ok: { 200: json('Deleted.', Data(DeletedSchema)) },
  }),
  route({
    id: 'webhooksTest', method: 'POST', path: '/v1/webhooks/{id}/test', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Send a test event',
    description:
      'Records a delivery of type `webhook.test` (`executionId` null) with `data.payload` (default `{}`) as the payload `data`, and answers it at once; ' +
      'the sender then delivers it like any other (signature, retries, auto-disable). While the webhook is disabled the delivery is recorded `skipped_disabled`. ' +
      'Follow it with `GET /v1/webhooks/{id}/deliveries`.',
    params: Params('id'),
    body: Body(Type.Object({ payload: Type.Optional(AnyObject({ description: 'The payload `data` (default `{}`).' })) })),
    ok: { 202: json('The recorded Delivery (`pending`, or `skipped_disabled` while the webhook is disabled).', Data(WebhookDeliverySchema)) },
  }),
  route({
    id: 'webhooksDeliveries', method: 'GET', path: '/v1/webhooks/{id}/deliveries', tag: 'webhooks', auth: ['session'],
    summary: 'List a webhook\'s deliveries, newest first',
    params: Params('id'),
    query: PageQuery,
    ok: { 200: json('A page of deliveries, newest first.', List(WebhookDeliverySchema)) },
  }),

  // ------------------------------------------------------------ operator
  route({
    id: 'orgsCreate', method: 'POST', path: '/v1/orgs', tag: 'operator', auth: ['operator'],
    summary: 'Create an organization',
    description: 'Operator token only. Answers the org and its credentials; secrets are shown only here (the service stores hashes).',
    body: Body(Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) })),
    ok: { 201: json('The org and its credentials.', Data(OrgCreatedSchema)) },
  }),
  route({
    id: 'orgsSessionsCreate', method: 'POST', path: '/v1/orgs/{orgId}/sessions', tag: 'operator', auth: ['operator'],
    summary: 'Issue a session token',
    description: 'Operator token only. Signs a session JWT for the org with the given role.',
    params: Params('orgId'),
    body: Body(Type.Object({ role: Role, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) })),
    ok: { 201: json('The session.', Data(SessionSchema)) },
  }),
  route({
    id: 'orgsLoginLinksCreate', method: 'POST', path: '/v1/orgs/{orgId}/login-links', tag: 'operator', auth: ['operator'],
    summary: 'Issue a dashboard login link',
    description: 'Operator token only (`headwater dashboard` calls it). Signs a single-use login token that expires after 5 minutes; ' +
      'the dashboard opens `URL/ui/#login=<loginToken>` and trades it for a session with `POST /v1/sessions/exchange`. ' +
      'A login token is no session: every other route answers it 401 `invalid_key`, so a leaked link is dead once used or expired.',
    params: Params('orgId'),
    body: Body(Type.Object({ role: Role, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) })),
    ok: { 201: json('The login token.', Data(LoginLinkSchema)) },
  }),
  route({
    id: 'sessionsExchange', method: 'POST', path: '/v1/sessions/exchange', tag: 'users', auth: ['none'],
    summary: 'Trade a login link for a session',
    description: 'No bearer: the body carries the login token of `POST /v1/orgs/{orgId}/login-links`. Answers a session of its org, role and user. ' +
      'Each login token is exchanged once; an expired, used, revoked (`POST /v1/sessions/revoke`) or forged one is 401 `invalid_key`.',
    body: Body(Type.Object({ loginToken: Type.String({ minLength: 1, maxLength: 4096 }) })),
    ok: { 201: json('The session.', Data(SessionSchema)) },
    errors: { 401: '`invalid_key`: the login token is invalid, expired, already used or revoked.' },
  }),
  route({
    id: 'credentialsRotate', method: 'POST', path: '/v1/credentials/rotate', tag: 'users', auth: ['session'], admin: true,
    summary: 'Rotate an org key',
    description: 'Issues a new key of `kind` and answers its secret, shown only here (the service keeps its sha256). Every current key of that kind ' +
      'keeps working until `expiresOldAt` (now + `graceSeconds`, default 0, at most 86400) and answers 401 `invalid_key` after it. ' +
      'The process that answers applies it at once; other processes sharing the database re-read a cached key at least every 5 seconds, ' +
      'so an old key is refused everywhere at most 5 s after `expiresOldAt`.',
    body: Body(Type.Object({
      kind: StringEnum(['apiKey', 'deployKey', 'pipelineKey'] as const),
      graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400, default: 0, description: 'How long the old key keeps working.' })),
    })),
    ok: { 200: json('The new key (shown once) and when the old one stops working.', Data(RotatedCredentialSchema)) },
  }),
  route({
    id: 'sessionsRevoke', method: 'POST', path: '/v1/sessions/revoke', tag: 'users', auth: ['session'], admin: true,
    summary: 'Revoke every session of the org',
    description: 'Every built-in session (and unused login link) of the org issued before `revokedBefore`, the caller\'s own included, answers 401 `invalid_key` from then on; ' +
      'the operator can still issue new ones (`POST /v1/orgs/{orgId}/sessions`). Other processes sharing the database apply it within 5 seconds. ' +
      'Tokens of an external identity provider are revoked at that provider.',
    optionalBody: true,
    body: Body(Type.Object({})),
    ok: { 200: json('The cut-off instant.', Data(SessionsRevokedSchema)) },
  }),
  route({
    id: 'orgsUpdate', method: 'PATCH', path: '/v1/orgs/{orgId}', tag: 'operator', auth: ['operator'],
    summary: 'Set an org\'s limits',
    description: 'Operator token only. A partial `limits` object changes only the given members. Rate and monthly limits take effect within one second; ' +
      'the quotas (artifactBytes, journeys, webhooks, segments, runningExecutions) at the next write they govern. A write past a quota answers 429 `over_quota` naming the limit.',
    params: Params('orgId'),
    body: Body(Type.Object({
      limits: Type.Object({
        ratePerSecond: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1000000000, description: 'Token-bucket refill rate per API key (at most 10^9).' })),
        burst: Type.Optional(Type.Number({ minimum: 1, maximum: 1000000000, description: 'Token-bucket size per API key (at most 10^9).' })),
        monthlyEvents: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 9007199254740991 }), { description: 'Accepted track calls per month (at most 2^53 - 1); null for unlimited.' })),
        artifactBytes: Type.Optional(QUOTA_MEMBERS.artifactBytes),
        journeys: Type.Optional(QUOTA_MEMBERS.journeys),
        webhooks: Type.Optional(QUOTA_MEMBERS.webhooks),
        segments: Type.Optional(QUOTA_MEMBERS.segments),
        runningExecutions: Type.Optional(QUOTA_MEMBERS.runningExecutions),
      }),
    })),
    ok: { 200: json('The org and its limits.', Data(OrgUpdatedSchema)) },
  }),
  route({
    id: 'eventsReconcile', method: 'POST', path: '/v1/events/reconcile', tag: 'operator', auth: ['operator'],
    summary: 'Compare acknowledged events with the event store',
    description: 'Operator token only (`headwater doctor` calls it). Every track event acknowledged in the window ' +
      '(its answer stored in Postgres between `since` inclusive and `until` exclusive, at most 24 hours apart) is looked up in ' +
      'ClickHouse by id; the answer counts them, lists the missing ones and says how many extra copies FINAL collapses. ' +
      '`drops` counts what the pipeline dropped or collapsed on purpose since the database was created. With `repair: true` ' +
      'the missing events are landed from their stored copies (journey triggers included), as a restart lands events answered before a stop. ' +
      'Events answered in the last seconds may still be on their way: end the window a minute ago.',
    body: Body(Type.Object({
      since: DateTime,
      until: DateTime,
      orgId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Only this org (default: every org).' })),
      repair: Type.Optional(Type.Boolean({ default: false })),
      limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, default: 100, description: 'Missing events listed at most.' })),
    })),
    ok: { 200: json('The reconciliation of the window.', Data(ReconciliationSchema)) },
  }),

  // ------------------------------------------------------------ settings and users
  route({
    id: 'settingsGet', method: 'GET', path: '/v1/settings', tag: 'settings', auth: ['session'],
    summary: 'Org settings',
    ok: { 200: json('The settings.', Data(SettingsSchema)) },
  }),
  route({
    id: 'settingsUpdate', method: 'PATCH', path: '/v1/settings', tag: 'settings', auth: ['session'], admin: true,
    summary: 'Change settings (partial)',
    description: 'Only the members given change, and within `retention` only the kinds given (null: keep forever); within `messaging` only the rules given (null: no rule).',
    body: Body(Type.Object({
      ingestionPolicy: Type.Optional(IngestionPolicy),
      retention: Type.Optional(Type.Partial(RetentionSchema, { additionalProperties: false })),
      messaging: Type.Optional(Type.Partial(MessagingSchema, { additionalProperties: false })),
    })),
    ok: { 200: json('The settings.', Data(SettingsSchema)) },
  }),
  route({
    id: 'usersMe', method: 'GET', path: '/v1/users/me', tag: 'users', auth: ['session', 'apiKey', 'deployKey', 'pipelineKey'],
    summary: 'Who am I',
    description: 'Accepts every org credential, so that tools learn their org. `role` and `userId` are null for keys.',
    ok: { 200: json('The caller.', Data(UsersMeSchema)) },
  }),

  // ------------------------------------------------------------ events and profiles
  route({
    id: 'eventsList', method: 'GET', path: '/v1/events', tag: 'events', auth: ['session'],
    summary: 'List events, newest first',
    description: 'Events are listed from the event store (ClickHouse), which the ingestion workers fill in batches: an event answered by `POST /v1/track` is listed within about `HEADWATER_EVENT_LINGER_MS` (250 ms by default) plus one insert, in every mode. The answer itself is durable (a crash before the insert lands the event on restart). `since` (inclusive) and `until` (exclusive) filter on `timestamp`.',
    query: Type.Object({
      ...PageQueryProps,
      profileId: Type.Optional(Filter),
      event: Type.Optional(Filter),
      appId: Type.Optional(Filter),
      since: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive, on `timestamp`.' })),
      until: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive, on `timestamp`.' })),
    }),
    ok: { 200: json('A page of events, newest first.', List(EventSchema)) },
  }),
  route({
    id: 'profilesGet', method: 'GET', path: '/v1/profiles/{id}', tag: 'events', auth: ['session'],
    summary: 'Fetch a profile as stored',
    description: 'A merged-away profile is answered as stored, `mergedInto` naming the survivor.',
    params: Params('id'),
    ok: { 200: json('The Profile.', Data(ProfileSchema)) },
  }),
  route({
    id: 'profilesMerged', method: 'GET', path: '/v1/profiles/{id}/merged', tag: 'events', auth: ['session'],
    summary: 'List the profiles merged into a profile',
    description: 'The merged-away profiles whose `mergedInto` is this profile (merges into a survivor are flattened: a profile merged twice names the last survivor), newest first, up to 100. Their events are part of the survivor\'s history.',
    params: Params('id'),
    ok: { 200: json('Up to 100 merged-away profiles.', List(ProfileSchema)) },
  }),
  route({
    id: 'profilesSegments', method: 'GET', path: '/v1/profiles/{id}/segments', tag: 'events', auth: ['session'],
    summary: 'List a profile\'s segment memberships',
    description: 'The segments the profile is a member of now, by segment id, up to 1,000. A merged-away profile is a member of none.',
    params: Params('id'),
    ok: { 200: json('The memberships.', List(SegmentMemberSchema)) },
  }),
  route({
    id: 'profilesList', method: 'GET', path: '/v1/profiles', tag: 'events', auth: ['session'],
    summary: 'List profiles, or find the one holding an identifier',
    description: 'Without `kind` and `value`: the org\'s live (not merged-away) profiles, newest first, paginated; `q` keeps those with an identifier value or a string trait ' +
      'containing it (case-insensitive). With `kind` and `value` (both or neither; one alone is 422 `validation_failed`): the live profiles holding the identifier `kind`=`value`, ' +
      'at most one per app since profiles are scoped to (org, app), newest first, up to 100 (`q` and `cursor` do not apply).',
    query: Type.Object({
      ...PageQueryProps,
      kind: Type.Optional(IdentifierKind),
      value: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A substring of an identifier value or of a string trait (name, e-mail, ...).' })),
    }),
    ok: { 200: json('A page of profiles, newest first.', List(ProfileSchema)) },
  }),

  // ------------------------------------------------------------ journeys and emails
  route({
    id: 'journeysList', method: 'GET', path: '/v1/journeys', tag: 'journeys', auth: ['session', 'deployKey'],
    summary: 'List journeys',
    description: 'In key order. A journey exists once a push filed a version of its key, and stays listed when later manifests no longer name it. `appId`, `trigger` and `purpose` come from its latest `ready` version (the one new executions take), or from its latest version while none is ready.',
    query: PageQuery,
    ok: { 200: json('A page of journeys.', List(JourneySchema)) },
  }),
  route({
    id: 'journeysGet', method: 'GET', path: '/v1/journeys/{key}', tag: 'journeys', auth: ['session', 'deployKey'],
    summary: 'Fetch a journey',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    ok: { 200: json('The Journey.', Data(JourneySchema)) },
  }),
  route({
    id: 'journeysUpdate', method: 'PATCH', path: '/v1/journeys/{key}', tag: 'journeys', auth: ['session', 'deployKey'], admin: true,
    summary: 'Enable or disable a journey',
    description: 'Session with `org:admin`, or a deploy key (which acts as org:admin on the release lifecycle). Only this route turns a journey on or off (a push never does). Enabling needs a `ready` version; disabling is always allowed. New executions take the newest ready version; running ones keep theirs.',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    body: Body(Type.Object({ enabled: Type.Boolean() })),
    ok: { 200: json('The Journey.', Data(JourneySchema)) },
    errors: { 409: '`release_not_ready`: enabling a journey that has no `ready` version.' },
  }),
  route({
    id: 'emailsList', method: 'GET', path: '/v1/emails', tag: 'emails', auth: ['session'],
    summary: 'List e-mails, newest first',
    description:
      '`ctx.email.send` renders the template version for `template` with `props` (validated against its `propsSchema`) and records the message here. ' +
      'With an SMTP transport configured (`SMTP_URL`) it is `pending` until the transport accepts it (`sent`), retried with exponential backoff on failure, ' +
      'and `failed` on a permanent refusal or when its attempts run out; without one it is `stored` in the local outbox and never sent. ' +
      'Delivery towards SMTP is at least once: every attempt carries the same `Message-ID` header. Session of any role; the deploy key is refused (403 `deploy_key_scope`: recipients and bodies are not part of the release lifecycle). ' +
      'Filters: `status`, `executionId`, `to` (exact, case-insensitive).',
    query: Type.Object({
      ...PageQueryProps,
      status: Type.Optional(StringEnum(['pending', 'sent', 'failed', 'stored'] as const)),
      executionId: Type.Optional(Filter),
      to: Type.Optional(Filter),
    }),
    ok: { 200: json('A page of e-mails, newest first.', List(EmailSchema)) },
  }),
  route({
    id: 'emailsGet', method: 'GET', path: '/v1/emails/{id}', tag: 'emails', auth: ['session'],
    summary: 'Fetch an e-mail',
    params: Params('id'),
    ok: { 200: json('The Email.', Data(EmailSchema)) },
  }),
  route({
    id: 'emailsTest', method: 'POST', path: '/v1/emails/test', tag: 'emails', auth: ['session'], admin: true,
    summary: 'Send a test e-mail',
    description:
      'Checks the SMTP settings: records an e-mail to `to` (`template` empty, `executionId` null) and answers it at once; the sender then hands it to the transport ' +
      'like any journey e-mail (retries included). Without `SMTP_URL` it is recorded `stored` and not sent. Follow it with `GET /v1/emails/{id}`.',
    body: Body(Type.Object({
      to: Type.String({ format: 'email', maxLength: 254 }),
      subject: Type.Optional(Type.String({ maxLength: 200, pattern: '^[^\\r\\n]*$', description: 'One line (default `Headwater test e-mail`).' })),
      text: Type.Optional(Type.String({ maxLength: 10000, description: 'Plain-text body (default: a line naming the org).' })),
    })),
    ok: { 202: json('The recorded Email (`pending`, or `stored` without a transport).', Data(EmailSchema)) },
  }),

  // ------------------------------------------------------------ Segment-compatible ingestion
  ...segmentRoutes,
  ...privacyRoutes({ route, json }),
  ...statsRoutes({ route, json }),
];
