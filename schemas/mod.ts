// Public entry of the contract. At run time this lives in dist/schemas/ beside generated/
// (written by `node dist/schemas/build.js`). Nothing here compiles a schema.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Static } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import {
  AppSchema, ArtifactSchema, BatchResultSchema, CatalogEventSchema, CatalogTraitSchema, DefinitionInputSchema,
  DefinitionSchema, DeletedSchema, DroppedSchema, EmailSchema, EventPredicateInputSchema, EventPredicateSchema,
  EventSchema, ExecutionDetailSchema, ExecutionSchema, HealthLiveSchema, HealthReadySchema, JournalCallSchema,
  JournalEntrySchema, JournalResultSchema, JourneyEntryInputSchema, JourneyEntrySchema, JourneySchema, LogEntrySchema,
  ManifestInputSchema, ManifestSchema, OrgCreatedSchema, OrgLimitsSchema, OrgSchema, OrgUpdatedSchema,
  PredicateInputSchema, PredicateSchema, ProfileSchema, PromotedSchema, PurposeEntrySchema, PushSchema,
  QuarantinedSchema, SegmentMemberSchema, SegmentPreviewSchema, SegmentSchema, SegmentWithCountSchema, SessionSchema,
  SettingsSchema, SourceSchema, SpineStepSchema, TemplateEntryInputSchema, TemplateEntrySchema, TraitPredicateSchema,
  TriggerSchema, UsersMeSchema, VersionSchema, WebhookDeliverySchema, WebhookSchema,
  TYPE_NAMES, IDENTIFIER_KINDS, EXECUTION_STATUSES, SPINE_STEP_NAMES, TRAIT_OPS, PREDICATE_SEMANTICS,
} from './resources.js';
import { Environment, ErrorEnvelope, Meta } from './common.js';

export { routes } from './routes.js';
export type { RouteDef, ResponseDef, Scheme } from './route.js';
export { ERROR_STATUS, ERROR_CODES } from './errors.js';
export type { ErrorCode } from './errors.js';
export { Data, List, Body, Nullable, StringEnum, MapOf, AnyObject, TaggedUnion, PageQuery, SearchPageQuery } from './common.js';

export {
  AppSchema, ArtifactSchema, BatchResultSchema, CatalogEventSchema, CatalogTraitSchema, DefinitionInputSchema,
  DefinitionSchema, DeletedSchema, DroppedSchema, EmailSchema, EventPredicateInputSchema, EventPredicateSchema,
  EventSchema, ExecutionDetailSchema, ExecutionSchema, HealthLiveSchema, HealthReadySchema, JournalCallSchema,
  JournalEntrySchema, JournalResultSchema, JourneyEntryInputSchema, JourneyEntrySchema, JourneySchema, LogEntrySchema,
  ManifestInputSchema, ManifestSchema, OrgCreatedSchema, OrgLimitsSchema, OrgSchema, OrgUpdatedSchema,
  PredicateInputSchema, PredicateSchema, ProfileSchema, PromotedSchema, PurposeEntrySchema, PushSchema,
  QuarantinedSchema, SegmentMemberSchema, SegmentPreviewSchema, SegmentSchema, SegmentWithCountSchema, SessionSchema,
  SettingsSchema, SourceSchema, SpineStepSchema, TemplateEntryInputSchema, TemplateEntrySchema, TraitPredicateSchema,
  TriggerSchema, UsersMeSchema, VersionSchema, WebhookDeliverySchema, WebhookSchema,
  TYPE_NAMES, IDENTIFIER_KINDS, EXECUTION_STATUSES, SPINE_STEP_NAMES, TRAIT_OPS, PREDICATE_SEMANTICS,
  Environment as EnvironmentSchema, ErrorEnvelope as ErrorEnvelopeSchema, Meta as MetaSchema,
};

export type Environment = Static<typeof Environment>;
export type Meta = Static<typeof Meta>;
export type ErrorEnvelope = Static<typeof ErrorEnvelope>;
export type Profile = Static<typeof ProfileSchema>;
export type Event = Static<typeof EventSchema>;
export type Quarantined = Static<typeof QuarantinedSchema>;
export type CatalogEvent = Static<typeof CatalogEventSchema>;
export type CatalogTrait = Static<typeof CatalogTraitSchema>;
export type Promoted = Static<typeof PromotedSchema>;
export type Dropped = Static<typeof DroppedSchema>;
export type App = Static<typeof AppSchema>;
export type Source = Static<typeof SourceSchema>;
export type TraitPredicate = Static<typeof TraitPredicateSchema>;
export type EventPredicate = Static<typeof EventPredicateSchema>;
export type EventPredicateInput = Static<typeof EventPredicateInputSchema>;
export type Predicate = Static<typeof PredicateSchema>;
export type PredicateInput = Static<typeof PredicateInputSchema>;
export type Definition = Static<typeof DefinitionSchema>;
export type DefinitionInput = Static<typeof DefinitionInputSchema>;
export type Segment = Static<typeof SegmentSchema>;
export type SegmentWithCount = Static<typeof SegmentWithCountSchema>;
export type SegmentMember = Static<typeof SegmentMemberSchema>;
export type SegmentPreview = Static<typeof SegmentPreviewSchema>;
export type Deleted = Static<typeof DeletedSchema>;
export type JournalCall = Static<typeof JournalCallSchema>;
export type JournalResult = Static<typeof JournalResultSchema>;
export type JournalEntry = Static<typeof JournalEntrySchema>;
export type LogEntry = Static<typeof LogEntrySchema>;
export type Execution = Static<typeof ExecutionSchema>;
export type ExecutionDetail = Static<typeof ExecutionDetailSchema>;
export type SpineStep = Static<typeof SpineStepSchema>;
export type Trigger = Static<typeof TriggerSchema>;
export type JourneyEntry = Static<typeof JourneyEntrySchema>;
export type JourneyEntryInput = Static<typeof JourneyEntryInputSchema>;
export type TemplateEntry = Static<typeof TemplateEntrySchema>;
export type TemplateEntryInput = Static<typeof TemplateEntryInputSchema>;
export type PurposeEntry = Static<typeof PurposeEntrySchema>;
export type Manifest = Static<typeof ManifestSchema>;
export type ManifestInput = Static<typeof ManifestInputSchema>;
export type Version = Static<typeof VersionSchema>;
export type Push = Static<typeof PushSchema>;
export type Artifact = Static<typeof ArtifactSchema>;
export type Journey = Static<typeof JourneySchema>;
export type Email = Static<typeof EmailSchema>;
export type Webhook = Static<typeof WebhookSchema>;
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;
export type Org = Static<typeof OrgSchema>;
export type OrgLimits = Static<typeof OrgLimitsSchema>;
export type OrgUpdated = Static<typeof OrgUpdatedSchema>;
export type OrgCreated = Static<typeof OrgCreatedSchema>;
export type Session = Static<typeof SessionSchema>;
export type Settings = Static<typeof SettingsSchema>;
export type UsersMe = Static<typeof UsersMeSchema>;
export type HealthLive = Static<typeof HealthLiveSchema>;
export type HealthReady = Static<typeof HealthReadySchema>;
export type BatchResult = Static<typeof BatchResultSchema>;

/**
 * Generated validators, by name `<routeId>_body`, `<routeId>_query`, `<routeId>_params`
 * (present only for the parts a route declares). Query and params validators coerce strings to the
 * declared types and all validators fill in `default`s, both in place on the validated object.
 */
export type Validators = { [name: string]: ValidateFunction };

let validators: Validators | undefined;
let openapi: object | undefined;

export function loadValidators(): Validators {
  validators ??= createRequire(import.meta.url)('./generated/validators.cjs') as Validators;
  return validators;
}

/** The OpenAPI 3.1 document served at /openapi.json. */
export function loadOpenApi(): object {
  openapi ??= JSON.parse(readFileSync(new URL('./generated/openapi.json', import.meta.url), 'utf8')) as object;
  return openapi;
}
