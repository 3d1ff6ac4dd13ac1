// Resources of the journey side of the contract: executions and their journals, pushes and manifests,
// journeys, e-mails and webhooks (components of the OpenAPI document). As in resources.ts,
// response schemas do not forbid unknown members.
import { Type } from '@sinclair/typebox';
import { AnyObject, DateTime, Environment, Id, MapOf, Nullable, StringEnum, TaggedUnion } from './common.js';
import { ExecutionStatus, Role } from './resources.js';

// ---------------------------------------------------------------- executions

const Duration = Type.Union([Type.String(), Type.Integer({ minimum: 0, maximum: 315360000000 })], {
  description: "A duration: '500ms', '2s', '5m', '1h', '3d' or an integer of milliseconds (at most 10 years).",
});

function call<N extends string, A extends Parameters<typeof Type.Object>[0]>(name: N, args: A) {
  const title = name.split('.').map((w) => w[0].toUpperCase() + w.slice(1)).join('') + 'Call';
  return Type.Object({ name: Type.Literal(name), args: Type.Object(args) }, { title });
}

export const JournalCallSchema = TaggedUnion(
  'name',
  [
    call('sleep', { duration: Duration }),
    call('waitForEvent', { event: Type.Union([Type.String(), Type.Array(Type.String())]), timeout: Duration }),
    call('email.send', { template: Type.String({ minLength: 0, maxLength: 64 }), props: AnyObject() }),
    call('webhook.send', { destination: Type.String({ minLength: 1, description: 'A webhook registry name, never a URL.' }), payload: AnyObject() }),
    call('traits.set', { key: Type.String({ minLength: 1 }), value: Type.Unknown() }),
    call('traits.unset', { key: Type.String({ minLength: 1 }) }),
    call('profile.get', {}),
    call('profiles.get', { id: Type.String({ minLength: 1 }) }),
    call('events.track', { event: Type.String({ minLength: 1 }), properties: AnyObject() }),
    call('restart', { event: Type.Optional(AnyObject()) }),
    call('split', {
      name: Type.String({ minLength: 1, maxLength: 100 }),
      weights: MapOf(Type.Number({ minimum: 0 }), { description: 'Variant key to its weight; the result is the chosen key.' }),
    }),
  ],
  { title: 'JournalCall', description: 'A recorded journey call `{ name, args }`, e.g. `{ name: "sleep", args: { duration: "1s" } }`.' },
);

export const JournalResultSchema = Type.Union(
  [
    Type.Object({ ok: Type.Literal(true), value: Type.Unknown({ description: 'null for a call with nothing to return.' }) }),
    Type.Object({ ok: Type.Literal(false), error: Type.Object({ code: Type.String({ minLength: 1 }), message: Type.String() }) }),
  ],
  { title: 'JournalResult' },
);

export const JournalEntrySchema = Type.Object(
  {
    call: JournalCallSchema,
    result: JournalResultSchema,
    at: Type.Integer({ minimum: 0, description: 'Position of the entry in the journal (0, 1, 2 ...).' }),
    recordedAt: Type.Optional(DateTime),
  },
  { title: 'JournalEntry', description: '`recordedAt` is when the entry was recorded (absent on entries recorded by earlier versions).' },
);

export const LogEntrySchema = Type.Object(
  {
    seq: Type.Integer(),
    level: StringEnum(['debug', 'info', 'warn', 'error'] as const),
    message: Type.String(),
    createdAt: DateTime,
  },
  { title: 'LogEntry' },
);

const executionProps = {
  id: Id,
  orgId: Id,
  journeyKey: Type.String(),
  profileId: Id,
  workflowId: Type.String(),
  runId: Type.String(),
  releaseId: Type.String({ description: 'Id of the push whose version this execution runs.' }),
  environment: Environment,
  status: ExecutionStatus,
  step: Nullable(Type.String()),
  timerDeadline: Nullable(DateTime),
  journalEntries: Type.Integer({ minimum: 0 }),
  error: Nullable(Type.String({ description: 'An error code, e.g. one of the `journey_*` codes, with detail.' })),
  startedAt: DateTime,
  updatedAt: DateTime,
  endedAt: Nullable(DateTime),
  exitReason: Nullable(Type.String({ description: 'Why the execution ended early: `event:<name>` (the journey\'s `exitOn`) or `goal` (its goal with `exit: true`); null otherwise.' })),
  converted: Type.Boolean({ description: 'The profile\'s goal event was written within the goal\'s `within` of the start (whatever the status).' }),
  convertedAt: Nullable(DateTime),
  holdout: Type.Boolean({ description: 'Held out by the journey\'s `holdout`: completed at once, ran no code; its conversion is still measured.' }),
  variants: MapOf(Type.String(), { description: 'Split name to the variant key `ctx.split` chose.' }),
};
export const ExecutionSchema = Type.Object(executionProps, { title: 'Execution' });
export const ExecutionDetailSchema = Type.Object(
  { ...executionProps, journal: Type.Array(JournalEntrySchema), logs: Type.Array(LogEntrySchema) },
  { title: 'ExecutionDetail' },
);

// ---------------------------------------------------------------- pushes and manifests

export const SPINE_STEP_NAMES = [
  'sleep', 'waitForEvent', 'send.email', 'send.webhook', 'traits.set', 'traits.unset',
  'profile.get', 'profiles.get', 'events.track', 'restart', 'if', 'loop', 'end',
] as const;

/** A step of a journey's spine (recursive: `steps` and `otherwise`). Emitted as components/schemas/SpineStep. */
export const SpineStepSchema = Type.Recursive(
  (This) =>
    Type.Object({
      name: StringEnum(SPINE_STEP_NAMES),
      detail: Type.Optional(Type.String({ maxLength: 200 })),
      timeout: Type.Optional(Type.String({ maxLength: 50 })),
      steps: Type.Optional(Type.Array(This)),
      otherwise: Type.Optional(Type.Array(This)),
    }),
  { $id: 'SpineStep', title: 'SpineStep' },
);

export const TriggerSchema = Type.Union(
  [
    Type.Object({ event: Type.String({ minLength: 1 }) }, { title: 'EventTrigger' }),
    Type.Object(
      { segment: Type.String({ minLength: 1 }), on: StringEnum(['entered', 'exited'] as const) },
      { title: 'SegmentTrigger', description: 'Shorthand for the `system.segment_entered` / `system.segment_exited` events of that segment.' },
    ),
  ],
  { title: 'Trigger', description: '`{ event }` starts a run for each such event of a profile; `{ segment, on }` on segment transitions.' },
);

// The controls below are checked when the version compiles (a bad value fails that version with
// its message, not the push): docs/authoring.md, "Controls".
const Enrollment = Type.Optional(
  Type.Object(
    {
      cooldown: Type.Optional(Duration),
      throttle: Type.Optional(Type.Unknown({ description: '`{ limit: integer, per: duration }`: at most `limit` new executions per `per` for the journey; triggers over it are skipped and counted.' })),
      debounce: Type.Optional(Type.Unknown({ description: 'A duration: start only once the trigger event has been quiet that long for the profile (the latest one becomes `ctx.event`).' })),
    },
    { description: '`cooldown` bounds how soon the same profile may enter again; `throttle` and `debounce` pace the starts.' },
  ),
);

const journeyEntryProps = {
  key: Type.String({ maxLength: 64 }),
  trigger: TriggerSchema,
  purpose: Type.String({ maxLength: 50, description: 'The journey runs for a profile only when `consent[purpose]` is true.' }),
  enrollment: Enrollment,
  description: Type.Optional(Type.String({ maxLength: 500 })),
  from: Type.Optional(Type.String({ maxLength: 200 })),
  exitOn: Type.Optional(Type.Unknown({ description: 'An event name or 1 to 20 names: such an event of the profile ends its running or waiting execution (`cancelled`, `exitReason: "event:<name>"`).' })),
  goal: Type.Optional(Type.Unknown({ description: '`{ event, within: duration, exit?: boolean }`: an execution is `converted` when the goal event is written within `within` of its start; with `exit: true` a running or waiting one ends `completed` (`exitReason: "goal"`).' })),
  holdout: Type.Optional(Type.Unknown({ description: 'A percentage from 0 to 50: that share of entrants (a stable hash of journey key and profile id) completes at once with `holdout: true`, running no code.' })),
  spine: Type.Array(SpineStepSchema),
  bundle: Type.String({ description: 'sha256 digest of the stored bundle artifact.' }),
};
export const JourneyEntryInputSchema = Type.Object(
  { ...journeyEntryProps, tags: Type.Optional(Type.Array(Type.String(), { maxItems: 20, default: [] })) },
  { title: 'JourneyEntryInput' },
);
export const JourneyEntrySchema = Type.Object(
  { ...journeyEntryProps, tags: Type.Optional(Type.Unknown()) },
  { title: 'JourneyEntry' },
);

const templateEntryProps = {
  key: Type.String({ maxLength: 64 }),
  sendClass: StringEnum(['marketing', 'transactional'] as const),
  verifyLink: Type.Boolean(),
  bundle: Type.String({ description: 'sha256 digest of the stored bundle artifact.' }),
};
export const TemplateEntryInputSchema = Type.Object(
  {
    ...templateEntryProps,
    tags: Type.Optional(Type.Array(Type.String(), { maxItems: 20, default: [] })),
    unsubscribeLink: Type.Optional(Type.Boolean({ default: false })),
    propsSchema: Type.Optional(AnyObject({ default: {}, description: 'JSON Schema the `props` of `email.send` are validated against.' })),
  },
  { title: 'TemplateEntryInput' },
);
export const TemplateEntrySchema = Type.Object(
  {
    ...templateEntryProps,
    tags: Type.Optional(Type.Unknown()),
    unsubscribeLink: Type.Optional(Type.Boolean()),
    propsSchema: Type.Optional(AnyObject()),
  },
  { title: 'TemplateEntry' },
);

export const PurposeEntrySchema = Type.Object(
  {
    key: Type.String({ maxLength: 50 }),
    label: Type.String({ minLength: 1, maxLength: 50 }),
    default: Type.Optional(StringEnum(['denied'] as const, { default: 'denied' })),
  },
  { title: 'PurposeEntry', description: 'Purposes default to denied: a profile must consent explicitly.' },
);

export const ManifestInputSchema = Type.Object(
  {
    protocol: Type.Unsafe<3>({ type: 'integer', const: 3, description: 'Must be 3.' }),
    sdk: Type.String({ minLength: 1, description: 'Name and version of the SDK the project was built against.' }),
    journeys: Type.Array(JourneyEntryInputSchema, { maxItems: 100 }),
    templates: Type.Array(TemplateEntryInputSchema, { maxItems: 200 }),
    purposes: Type.Optional(Type.Array(PurposeEntrySchema, { maxItems: 20 })),
    source: Type.String({ description: 'sha256 digest of the stored source archive artifact.' }),
  },
  { title: 'ManifestInput' },
);
export const ManifestSchema = Type.Object(
  {
    protocol: Type.Integer(),
    sdk: Type.String(),
    journeys: Type.Array(JourneyEntrySchema),
    templates: Type.Array(TemplateEntrySchema),
    purposes: Type.Optional(Type.Array(PurposeEntrySchema)),
    source: Type.String(),
  },
  { title: 'Manifest' },
);

export const VersionSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    key: Type.String(),
    appId: Id,
    pushId: Id,
    kind: StringEnum(['journey', 'template'] as const),
    moduleDigest: Nullable(Type.String(), { description: 'sha256 of the compiled module (the script the runtime loads); null until `ready`.' }),
    manifest: Type.Union([JourneyEntrySchema, TemplateEntrySchema], { description: 'The journey or template entry of the manifest.' }),
    status: StringEnum(['compiling', 'ready', 'failed'] as const),
    pushedAt: DateTime,
    compiledAt: Nullable(DateTime),
    error: Nullable(Type.String(), { description: 'Why the compile failed (`failed` only).' }),
  },
  { title: 'Version' },
);

export const PushSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    appId: Id,
    seq: Type.Integer(),
    manifest: ManifestSchema,
    manifestDigest: Type.String(),
    sourceDigest: Type.String(),
    createdBy: Type.String({ description: 'Who pushed: the session\'s user id (`sub`), or `pipelineKey`.' }),
    createdByRole: Nullable(Role, { description: 'The pushing session\'s role (`org:admin` or `org:member`); null for the pipeline key' }),
    createdByScheme: StringEnum(['session', 'pipelineKey'] as const, { description: 'The kind of credential that pushed.' }),
    createdAt: DateTime,
    versions: Type.Array(VersionSchema),
    compiledEntries: Type.Integer({ minimum: 0, description: 'Versions of this push whose compile has finished (ready or failed).' }),
    totalEntries: Type.Integer({ minimum: 0, description: 'Versions this push filed.' }),
  },
  { title: 'Push' },
);

export const ArtifactSchema = Type.Object(
  {
    digest: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    kind: StringEnum(['bundle', 'source'] as const),
    size: Type.Integer({ minimum: 0 }),
    createdAt: DateTime,
  },
  { title: 'Artifact' },
);

export const JourneySchema = Type.Object(
  {
    key: Type.String(),
    orgId: Id,
    appId: Id,
    enabled: Type.Boolean(),
    trigger: TriggerSchema,
    purpose: Type.String(),
    versionId: Nullable(Type.String(), { description: 'Latest `ready` version; null while none is ready.' }),
    pushId: Nullable(Type.String(), { description: 'Push of the latest `ready` version; null while none is ready.' }),
    updatedAt: Type.String({ format: 'date-time', description: 'Moves when the journey is enabled or disabled, when a push files a version of its key, and when a version of it becomes ready.' }),
    latestVersion: Nullable(Type.Object({
      id: Type.String(),
      status: StringEnum(['compiling', 'ready', 'failed'] as const),
      error: Nullable(Type.String(), { description: 'Why the compile failed (`failed` only).' }),
      createdAt: DateTime,
    }), { description: 'The newest version of the key, whatever its status: `compiling` until the compiler has judged it, then `ready` or `failed` with its error. `versionId` stays the newest ready one.' }),
  },
  { title: 'Journey' },
);

export const EmailSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    executionId: Nullable(Type.String(), { description: 'The journey execution that sent it; null for test e-mails.' }),
    template: Type.String({ maxLength: 64, description: 'Template key (empty for test e-mails).' }),
    to: Type.String(),
    subject: Type.String(),
    text: Type.String(),
    html: Type.String({ description: 'Empty when the message has no HTML part.' }),
    status: StringEnum(['pending', 'sent', 'failed', 'stored'] as const, {
      description: '`pending`: waiting to be handed to the SMTP transport (first attempt or a retry); `sent`: the SMTP server accepted it; ' +
        '`failed`: refused permanently (an SMTP 5xx answer) or out of attempts; `stored`: kept in the local outbox because no transport (`SMTP_URL`) is configured, never sent.',
    }),
    attempts: Type.Integer({ description: 'Attempts made so far.' }),
    lastError: Nullable(Type.String(), { description: 'Why the last attempt failed.' }),
    messageId: Nullable(Type.String(), { description: 'The `Message-ID` header it was sent with (`<id@domain of the From address>`, the same on every attempt); null until sent.' }),
    createdAt: DateTime,
    updatedAt: DateTime,
    sentAt: Nullable(DateTime),
  },
  { title: 'Email' },
);

// ---------------------------------------------------------------- webhooks

export const WebhookSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    name: Type.String(),
    config: Type.Object({ url: Type.String({ format: 'uri' }) }),
    webhookPayloadVersion: Type.Integer(),
    disabledAt: Nullable(DateTime),
    createdAt: DateTime,
    updatedAt: DateTime,
    signingSecret: Type.Optional(Type.String({ description: '`whsec_` + base64; present only in the creation response.' })),
  },
  { title: 'Webhook' },
);

export const WebhookDeliverySchema = Type.Object(
  {
    id: Type.String({ minLength: 1, description: 'Also the `webhook-id` header of every attempt and the payload `id`: the receiver\'s idempotency key, the same across retries.' }),
    webhookId: Id,
    executionId: Nullable(Type.String(), { description: 'The journey execution that sent it; null for test deliveries.' }),
    status: StringEnum(['pending', 'succeeded', 'failed', 'skipped_disabled'] as const, {
      description: '`pending`: waiting for its first or next attempt. `succeeded`: the receiver answered 2xx. `failed`: every attempt failed, or the private-network guard refused the target. `skipped_disabled`: the webhook was disabled when it was due; it is never sent.',
    }),
    attempts: Type.Integer({ minimum: 0, description: 'Attempts made so far.' }),
    lastStatusCode: Nullable(Type.Integer(), { description: 'HTTP status of the last attempt; null when none answered (network error, timeout, refusal).' }),
    lastError: Nullable(Type.String(), { description: 'Why the last attempt failed (status, network error, timeout, or the private-network guard\'s refusal); null after a success or before any attempt.' }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: 'WebhookDelivery' },
);
