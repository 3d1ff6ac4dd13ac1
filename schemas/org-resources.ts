// Resources of orgs, settings and users, health, batch answers and reconciliation (components of
// the OpenAPI document). As in resources.ts, response schemas do not forbid unknown members.
import { Type } from '@sinclair/typebox';
import { DateTime, Id, MapOf, Nullable, StringEnum } from './common.js';
import { IngestionPolicy, Role } from './resources.js';

// ---------------------------------------------------------------- orgs, settings, users

export const OrgSchema = Type.Object({ id: Id, name: Type.String(), createdAt: DateTime }, { title: 'Org' });

/** Per-org quotas (issue 23); defaults in pipeline/quotas.ts, enforced where each description says. */
const quota = (description: string) => Nullable(Type.Integer({ minimum: 0, maximum: 9007199254740991 }), { description: `${description} At most 2^53 - 1; null for unlimited.` });
export const QUOTA_MEMBERS = {
  artifactBytes: quota('Total bytes of the org\'s stored artifacts (default 1 GiB = 1073741824). An upload that would pass it answers 429 `over_quota` (re-uploading a stored digest adds nothing).'),
  journeys: quota('Journeys of the org (default 1000). A push that files a journey key the org does not have yet, past the limit, answers 429 `over_quota` and stores nothing.'),
  webhooks: quota('Webhooks of the org (default 100). `POST /v1/webhooks` past it answers 429 `over_quota`.'),
  segments: quota('Segments of the org (default 1000). `POST /v1/segments` past it answers 429 `over_quota`.'),
  runningExecutions: quota('Executions of the org in status `running` or `waiting` (default 100000). A trigger past it does not start: the execution is ' +
    'recorded as `failed` with error `over_quota: ...` (never queued), so the journey\'s other profiles and other orgs are not delayed.'),
};

export const OrgLimitsSchema = Type.Object(
  {
    ratePerSecond: Type.Number({ description: 'Token-bucket refill rate per API key (calls per second).' }),
    burst: Type.Number({ description: 'Token-bucket size per API key.' }),
    monthlyEvents: Nullable(Type.Integer(), { description: 'Accepted track calls per calendar month; null for unlimited.' }),
    ...QUOTA_MEMBERS,
  },
  { title: 'OrgLimits', description: 'Quota members (artifactBytes, journeys, webhooks, segments, runningExecutions) are checked at the write that would pass them, ' +
    'against the org\'s stored limit read at that write: a change applies to the next write. Lowering a quota below what the org already has removes nothing; it only refuses further writes.' },
);

export const OrgUpdatedSchema = Type.Object({ org: OrgSchema, limits: OrgLimitsSchema }, { title: 'OrgUpdated' });

export const OrgCreatedSchema = Type.Object(
  {
    org: OrgSchema,
    apiKey: Type.String({ description: 'Org API key (ingestion).' }),
    deployKey: Type.String({ description: 'Org deploy key (release lifecycle).' }),
    pipelineKey: Type.String({ description: 'Org pipeline key (push creation, artifacts, `GET /v1/users/me`).' }),
    sessions: Type.Object({
      admin: Type.String({ description: 'Session token with role `org:admin`.' }),
      member: Type.String({ description: 'Session token with role `org:member`.' }),
    }),
  },
  { title: 'OrgCreated', description: 'Secrets are shown only in this response; the service stores hashes.' },
);

export const SessionSchema = Type.Object(
  { token: Type.String({ description: 'A JWT.' }), role: Role, expiresAt: DateTime },
  { title: 'Session' },
);

export const LoginLinkSchema = Type.Object(
  {
    loginToken: Type.String({ description: 'A single-use JWT for `POST /v1/sessions/exchange`; it is no session token.' }),
    role: Role,
    expiresAt: DateTime,
  },
  { title: 'LoginLink' },
);

export const RotatedCredentialSchema = Type.Object(
  {
    kind: StringEnum(['apiKey', 'deployKey', 'pipelineKey'] as const),
    secret: Type.String({ description: 'The new key, shown only in this answer (the service keeps its sha256).' }),
    expiresOldAt: DateTime,
  },
  { title: 'RotatedCredential' },
);

export const SessionsRevokedSchema = Type.Object({ revokedBefore: DateTime }, { title: 'SessionsRevoked' });

const RetentionDays = Nullable(Type.Integer({ minimum: 1, maximum: 3650 }), { description: 'Days, 1 to 3650; null keeps forever.' });
export const RetentionSchema = Type.Object(
  {
    events: RetentionDays,
    executions: RetentionDays,
    emails: RetentionDays,
    webhookDeliveries: RetentionDays,
    rejections: RetentionDays,
  },
  {
    title: 'Retention',
    description: 'How long each kind of record is kept (docs/privacy.md). Defaults: events null, executions 90, emails 30, webhookDeliveries 30, rejections 30. ' +
      'A sweep (every `HEADWATER_RETENTION_SWEEP_MS`, one hour by default) deletes what is older: events by `timestamp`, executions that ended before the window ' +
      '(never a running or waiting one) with their logs, e-mails and webhook deliveries by creation (never a pending one), Segment rejections by creation.',
  },
);
export const FrequencyCapSchema = Type.Object(
  {
    max: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    per: Type.Union([Type.String({ maxLength: 20 }), Type.Integer({ minimum: 1, maximum: 315_360_000_000 })], { description: "A duration like '1d' or '7d', or milliseconds (at most 10 years)." }),
  },
  { title: 'FrequencyCap', description: 'At most `max` marketing e-mails to a profile per `per`; an `email.send` over it answers `frequency_capped` and sends nothing.' },
);
export const QuietHoursSchema = Type.Object(
  {
    start: Type.String({ description: "Local time of day 'HH:MM' (24-hour; 'HH:MM:SS' is accepted too)." }),
    end: Type.String({ description: "Local time of day 'HH:MM'; before `start` the window spans midnight." }),
    timezoneTrait: Type.String({ minLength: 1, maxLength: 200, description: 'The profile trait holding its IANA time zone name.' }),
    defaultTimezone: Type.String({ minLength: 1, maxLength: 100, description: 'IANA name used when the trait is missing or not a time zone.' }),
  },
  { title: 'QuietHours', description: 'A marketing `email.send` inside these hours (the profile\'s local time) waits on a durable timer until they end, then sends, as one journal entry.' },
);
export const MessagingSchema = Type.Object(
  { frequencyCap: Nullable(FrequencyCapSchema), quietHours: Nullable(QuietHoursSchema) },
  { title: 'Messaging', description: 'Rules for e-mail of templates with `sendClass: "marketing"`; transactional e-mail is never capped or deferred. null: no rule.' },
);
export const SettingsSchema = Type.Object({ ingestionPolicy: IngestionPolicy, retention: RetentionSchema, messaging: MessagingSchema }, { title: 'Settings' });

export const UsersMeSchema = Type.Object(
  {
    orgId: Id,
    scheme: StringEnum(['session', 'apiKey', 'deployKey', 'pipelineKey'] as const),
    role: Nullable(Role, { description: 'null for keys.' }),
    userId: Nullable(Type.String(), { description: 'null for keys.' }),
  },
  { title: 'UsersMe' },
);

// ---------------------------------------------------------------- health

export const HealthLiveSchema = Type.Object({ status: Type.Literal('ok') }, { title: 'HealthLive' });
export const HealthReadySchema = Type.Object(
  {
    status: Type.Literal('ok'),
    checks: MapOf(Type.Boolean(), { description: 'Configured dependency name (`postgres`, `clickhouse`, `nats`) to its state.' }),
    frontEnd: Type.Union([Type.Literal('uws'), Type.Literal('node:http')], {
      description: 'The HTTP front end serving: `uws` (uWebSockets.js, where a build loads on this Node release and libc) or `node:http` (the fallback, same behaviour, lower throughput).',
    }),
  },
  { title: 'HealthReady' },
);

// ---------------------------------------------------------------- batch

export const BatchResultSchema = Type.Union(
  [
    Type.Object({ status: Type.Integer(), data: Type.Unknown({ description: 'A Profile, an Event or `{ status: "quarantined" }`.' }) }),
    Type.Object({ status: Type.Integer(), error: Type.Object({ code: Type.String(), message: Type.String() }) }),
  ],
  { title: 'BatchResult', description: '`status` is the HTTP status the call would have had alone.' },
);

// ---------------------------------------------------------------- reconciliation

export const DropCountSchema = Type.Object(
  {
    reason: StringEnum(['duplicate_messages', 'replayed_events', 'abandoned_calls', 'relanded_events'] as const),
    description: Type.String(),
    count: Type.Integer({ minimum: 0, description: 'Since the database was created, over every process.' }),
    firstAt: Nullable(DateTime),
    lastAt: Nullable(DateTime),
  },
  { title: 'DropCount', description: 'What the pipeline dropped or collapsed on purpose, for one reason.' },
);

export const MissingEventSchema = Type.Object(
  {
    orgId: Type.String(), appId: Type.String(), messageId: Type.String(), eventId: Type.String(),
    profileId: Type.String(), event: Type.String(), storedAt: DateTime,
  },
  { title: 'MissingEvent', description: 'An acknowledged track event stored in Postgres and absent from ClickHouse.' },
);

export const ReconciliationSchema = Type.Object(
  {
    since: DateTime,
    until: DateTime,
    acknowledged: Type.Integer({ minimum: 0, description: 'Track events acknowledged (stored in Postgres) in the window.' }),
    landed: Type.Integer({ minimum: 0, description: 'Of those, how many ClickHouse holds.' }),
    missing: Type.Integer({ minimum: 0, description: 'acknowledged - landed (before any repair).' }),
    missingEvents: Type.Array(MissingEventSchema, { description: 'The first `limit` missing events, oldest first.' }),
    collapsed: Type.Integer({ minimum: 0, description: 'Extra copies of those events in ClickHouse (re-emitted, read once with FINAL).' }),
    repaired: Type.Integer({ minimum: 0, description: 'Missing events landed by this call (`repair: true`).' }),
    drops: Type.Array(DropCountSchema),
  },
  { title: 'Reconciliation' },
);
