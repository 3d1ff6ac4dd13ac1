// Resources of the contract (interface.md "Resources and their fields", decisions.md).
// Response schemas do not forbid unknown members; required members are exactly those of the contract.
import { Type } from '@sinclair/typebox';
import { AnyObject, DateTime, Environment, Id, MapOf, Nullable, StringEnum, TaggedUnion } from './common.js';

// ---------------------------------------------------------------- enums

export const TYPE_NAMES = [
  'string', 'number', 'boolean', 'object',
  'array<any>', 'array<string>', 'array<number>', 'array<boolean>', 'array<object>',
] as const;
export const TypeName = StringEnum(TYPE_NAMES, {
  title: 'TypeName',
  description: 'Property and trait type names. Observation infers an array\'s item type when all members agree, and `array<any>` when they disagree or the array is empty.',
});
export const IDENTIFIER_KINDS = ['anonymousId', 'userId', 'idpId', 'email'] as const;
export const IdentifierKind = StringEnum(IDENTIFIER_KINDS, { title: 'IdentifierKind' });
export const GovernanceState = StringEnum(['allowed', 'denied'] as const, { title: 'GovernanceState' });
export const EXECUTION_STATUSES = ['running', 'waiting', 'completed', 'failed', 'cancelled'] as const;
export const ExecutionStatus = StringEnum(EXECUTION_STATUSES, { title: 'ExecutionStatus' });
export const Role = StringEnum(['org:admin', 'org:member'] as const, { title: 'Role' });
export const IngestionPolicy = StringEnum(['permissive', 'strict'] as const, {
  title: 'IngestionPolicy',
  description: '`permissive` (default): unknown event and trait names are registered as `allowed`. `strict`: unknown names are held in the quarantine queue until promoted or denied.',
});

// ---------------------------------------------------------------- ingestion

export const ProfileSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    environment: Environment,
    appId: Id,
    sourceId: Id,
    traits: AnyObject({ description: 'Object of any values.' }),
    consent: MapOf(Type.Boolean(), { description: 'Purpose name to boolean; updated from `traits.consent`.' }),
    mergedInto: Nullable(Type.String(), { description: 'Id of the surviving profile when this one was merged away.' }),
    createdAt: DateTime,
    updatedAt: DateTime,
    identifiers: Type.Array(
      Type.Object({ kind: IdentifierKind, value: Type.String(), createdAt: DateTime }),
    ),
    anonymous: Type.Boolean({ description: 'True while the profile has only `anonymousId` identifiers.' }),
  },
  { title: 'Profile' },
);

export const EventSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    appId: Id,
    sourceId: Id,
    profileId: Id,
    environment: Environment,
    event: Type.String(),
    properties: AnyObject({ description: 'Object of any values.' }),
    timestamp: DateTime,
    receivedAt: DateTime,
    messageId: Nullable(Type.String()),
    context: Type.Optional(AnyObject({
      description: 'Where the call came from (`library`, `page`, `userAgent`, `ip`, ...), present when the call carried one (Segment-compatible calls). Kept as sent, outside the tracking plan: no catalog entry, no governance.',
    })),
  },
  { title: 'Event' },
);

export const QuarantinedSchema = Type.Object(
  { status: Type.Literal('quarantined') },
  { title: 'Quarantined', description: 'The call was held whole under the `strict` ingestion policy.' },
);

// ---------------------------------------------------------------- catalog

export const CatalogEventSchema = Type.Object(
  {
    orgId: Id,
    name: Type.String(),
    properties: MapOf(TypeName, { description: 'Property name to type name.' }),
    state: GovernanceState,
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: 'CatalogEvent' },
);

export const CatalogTraitSchema = Type.Object(
  {
    orgId: Id,
    name: Type.String(),
    type: TypeName,
    state: GovernanceState,
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: 'CatalogTrait' },
);

export const PromotedSchema = Type.Object({ promoted: Type.Integer({ minimum: 0 }) }, { title: 'Promoted' });
export const DroppedSchema = Type.Object({ dropped: Type.Integer({ minimum: 0 }) }, { title: 'Dropped' });
export const QuarantineEntrySchema = Type.Object({
  kind: StringEnum(['event', 'trait'] as const),
  name: Type.String({ minLength: 1 }),
  held: Type.Integer({ minimum: 1, description: 'Values held under this name (calls for an event, values for a trait).' }),
  firstHeldAt: DateTime,
  lastHeldAt: DateTime,
}, { title: 'QuarantineEntry' });

// ---------------------------------------------------------------- apps and sources

export const AppSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    name: Type.String(),
    environment: Environment,
    status: StringEnum(['active', 'archived'] as const),
    createdAt: DateTime,
    updatedAt: DateTime,
    archivedAt: Nullable(DateTime),
    sourceCount: Type.Integer({ minimum: 0 }),
    lastReceivedAt: Nullable(DateTime, { description: 'Time of the latest successful write through it. The process that answered a write shows it in its next read; other front-end processes of a scaled deployment show it within about a second (times are flushed to Postgres once a second).' }),
  },
  { title: 'App', description: 'The attribution unit (one per product). Carries no kind, configuration or credential of its own.' },
);

/** `POST /v1/apps` answers the App with its default source, so one call gives the source id. */
export const CreatedAppSchema = Type.Composite([
  AppSchema,
  Type.Object({
    sources: Type.Array(Type.Object({
      id: Id,
      kind: StringEnum(['api', 'idp'] as const),
      name: Type.String({ description: 'What the source is: `api` for the first-party source created with the app.' }),
    }), { description: 'The source(s) created with the app: its first-party `api` source. Ingestion calls name it as `sourceId`.' }),
  }),
], { title: 'CreatedApp' });

export const SourceSchema = Type.Object(
  {
    id: Id,
    orgId: Id,
    appId: Id,
    kind: StringEnum(['api', 'idp'] as const, {
      description: '`api`: the first-party source created with the app. `idp`: an identity provider pushing into the app through the webhook receiver.',
    }),
    config: Type.Unknown({ description: 'Any JSON value. A signing secret inside it is write-only and never appears in a response.' }),
    configured: Type.Boolean({ description: 'Whether a signing secret is stored.' }),
    lastReceivedAt: Nullable(DateTime, { description: 'Time of the latest successful write through it. The process that answered a write shows it in its next read; other front-end processes of a scaled deployment show it within about a second (times are flushed to Postgres once a second).' }),
    createdAt: DateTime,
    updatedAt: DateTime,
    archivedAt: Nullable(DateTime),
  },
  { title: 'Source' },
);

export const WriteKeySchema = Type.Object(
  {
    id: Id,
    writeKey: Nullable(Type.String(), {
      description: 'The key (`hww_` + 43 characters), shown only in the answer that created it; `null` in lists (only its sha256 is stored).',
    }),
    prefix: Type.String({ description: 'The first 12 characters of the key, to tell keys apart.' }),
    sourceId: Id,
    createdAt: DateTime,
  },
  {
    title: 'WriteKey',
    description: 'A Segment-compatible ingestion credential of one source: valid only on `/segment/v1/...` and only into its source. Public by nature (it ships inside web pages and apps).',
  },
);

// ---------------------------------------------------------------- segments

export const PREDICATE_SEMANTICS =
  'Predicate semantics: `eq` compares by exact JSON equality (types must match, objects by keys, arrays in order); ' +
  '`neq` is its negation, so a profile without the trait matches `neq`. `gt`/`gte`/`lt`/`lte` compare a number with a number, ' +
  'or an ISO 8601 date (`2024-03-01`, midnight UTC) or RFC 3339 date-time with offset with another one, as instants; any other ' +
  'pairing is false (and the predicate `value` itself must be a number or such a date: 422 otherwise). `eq`, `neq`, ordering ops ' +
  'and `contains` need a `value`. `contains` is substring for a string trait and string value, membership (exact JSON equality) ' +
  'for an array trait, false otherwise. `exists`/`notExists` test presence of the top-level trait (a null value counts as present). ' +
  'An event predicate `performed` matches when the profile has at least `atLeast` events of that name, within the last ' +
  '`withinDays` x 24 h counted by event `timestamp` when given (all history otherwise, including events stored before the ' +
  'segment existed); `notPerformed` is its negation (fewer than `atLeast`). System events (`system.segment_entered` / ' +
  '`system.segment_exited`) are events of the profile and may be named. `withinDays` windows move with time: a periodic sweep ' +
  '(default every minute) exits profiles whose qualifying events aged out and enters `notPerformed` profiles. A segment applies ' +
  'only to profiles of its `environments` and, when `appId` is set, of those apps.';

export const TRAIT_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists', 'notExists', 'contains'] as const;
export const TraitPredicateSchema = Type.Object(
  {
    kind: Type.Literal('trait'),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    op: StringEnum(TRAIT_OPS),
    value: Type.Optional(Type.Unknown()),
  },
  { title: 'TraitPredicate' },
);

const eventPredicateProps = {
  kind: Type.Literal('event'),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  op: StringEnum(['performed', 'notPerformed'] as const),
  withinDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 36500, description: 'Counts events by their `timestamp`; at most 36,500 days (100 years).' })),
};
/** Event predicate as accepted: `atLeast` defaults to 1. */
export const EventPredicateInputSchema = Type.Object(
  { ...eventPredicateProps, atLeast: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647, default: 1 })) },
  { title: 'EventPredicateInput' },
);
/** Event predicate as answered: `atLeast` always present. */
export const EventPredicateSchema = Type.Object(
  { ...eventPredicateProps, atLeast: Type.Integer({ minimum: 1, maximum: 2147483647 }) },
  { title: 'EventPredicate' },
);

export const PredicateInputSchema = TaggedUnion('kind', [TraitPredicateSchema, EventPredicateInputSchema], {
  title: 'PredicateInput',
  description: PREDICATE_SEMANTICS,
});
export const PredicateSchema = TaggedUnion('kind', [TraitPredicateSchema, EventPredicateSchema], {
  title: 'Predicate',
  description: PREDICATE_SEMANTICS,
});

const DefinitionAppId = Type.Optional(
  Type.Union([Type.String(), Type.Array(Type.String()), Type.Null()], {
    description: 'Restricts the segment to profiles of this app (or these apps); null or absent: every app.',
  }),
);
const DEFINITION_DESCRIPTION =
  'A flat predicate list. `match` `all` requires every predicate, `any` at least one. ' + PREDICATE_SEMANTICS;

export const DefinitionInputSchema = Type.Object(
  {
    match: Type.Optional(StringEnum(['all', 'any'] as const, { default: 'all' })),
    appId: DefinitionAppId,
    predicates: Type.Array(PredicateInputSchema, { minItems: 1 }),
  },
  { title: 'DefinitionInput', description: DEFINITION_DESCRIPTION },
);
export const DefinitionSchema = Type.Object(
  {
    match: StringEnum(['all', 'any'] as const),
    appId: DefinitionAppId,
    predicates: Type.Array(PredicateSchema, { minItems: 1 }),
  },
  { title: 'Definition', description: DEFINITION_DESCRIPTION },
);

const segmentProps = {
  id: Id,
  orgId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  definition: DefinitionSchema,
  environments: Type.Array(Environment, { minItems: 1, description: 'The segment applies only to profiles of these environments.' }),
  createdAt: DateTime,
  updatedAt: DateTime,
};
/** Segment as listed (no memberCount). */
export const SegmentSchema = Type.Object(
  { ...segmentProps, memberCount: Type.Optional(Type.Integer({ minimum: 0 })) },
  { title: 'Segment' },
);
/** Segment as answered by create, fetch and update (exact memberCount). */
export const SegmentWithCountSchema = Type.Object(
  { ...segmentProps, memberCount: Type.Integer({ minimum: 0 }) },
  { title: 'SegmentWithCount' },
);

export const SegmentMemberSchema = Type.Object(
  { segmentId: Id, orgId: Id, profileId: Id, enteredAt: DateTime },
  { title: 'SegmentMember' },
);

export const SegmentPreviewSchema = Type.Object(
  {
    memberCount: Type.Integer({ minimum: 0 }),
    members: Type.Array(Type.String(), { description: 'Ids of matching profiles.' }),
    scanned: Type.Integer({ minimum: 0, description: 'Profiles scanned.' }),
    truncated: Type.Boolean({ description: 'Whether the scan stopped at the cap (default 10,000 profiles, configurable).' }),
  },
  { title: 'SegmentPreview' },
);

export const DeletedSchema = Type.Object({ deleted: Type.Literal(true) }, { title: 'Deleted' });

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
