// Resources of the contract (components of the OpenAPI document).
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
  'segment existed, back to the org\'s event retention); `notPerformed` is its negation (fewer than `atLeast`). System events (`system.segment_entered` / ' +
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
