// Public entry of the contract. At run time this lives in dist/schemas/ beside generated/
// (written by `node dist/schemas/build.js`). Nothing here compiles a schema.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Static } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import type * as R from './resources.js';
import type * as J from './journey-resources.js';
import type * as O from './org-resources.js';
import type { Environment as EnvironmentSchema, ErrorEnvelope as ErrorEnvelopeSchema, Meta as MetaSchema } from './common.js';

export { routes } from './routes.js';
export type { RouteDef, ResponseDef, Scheme } from './route.js';
export { ERROR_STATUS, ERROR_CODES } from './errors.js';
export type { ErrorCode } from './errors.js';
export { Data, List, Body, Nullable, StringEnum, MapOf, AnyObject, TaggedUnion, PageQuery, SearchPageQuery } from './common.js';

export {
  AppSchema, CatalogEventSchema, CatalogTraitSchema, DefinitionInputSchema, DefinitionSchema, DeletedSchema,
  DroppedSchema, EventPredicateInputSchema, EventPredicateSchema, EventSchema, PredicateInputSchema, PredicateSchema,
  ProfileSchema, PromotedSchema, QuarantinedSchema, SegmentMemberSchema, SegmentPreviewSchema, SegmentSchema,
  SegmentWithCountSchema, SourceSchema, TraitPredicateSchema, TYPE_NAMES, IDENTIFIER_KINDS, EXECUTION_STATUSES,
  TRAIT_OPS, PREDICATE_SEMANTICS,
} from './resources.js';
export {
  ArtifactSchema, EmailSchema, ExecutionDetailSchema, ExecutionSchema, JournalCallSchema, JournalEntrySchema,
  JournalResultSchema, JourneyEntryInputSchema, JourneyEntrySchema, JourneySchema, LogEntrySchema,
  ManifestInputSchema, ManifestSchema, PurposeEntrySchema, PushSchema, SpineStepSchema, TemplateEntryInputSchema,
  TemplateEntrySchema, TriggerSchema, VersionSchema, WebhookDeliverySchema, WebhookSchema, SPINE_STEP_NAMES,
} from './journey-resources.js';
export {
  BatchResultSchema, HealthLiveSchema, HealthReadySchema, OrgCreatedSchema, OrgLimitsSchema, OrgSchema,
  OrgUpdatedSchema, SessionSchema, SettingsSchema, UsersMeSchema,
} from './org-resources.js';
export { Environment as EnvironmentSchema, ErrorEnvelope as ErrorEnvelopeSchema, Meta as MetaSchema } from './common.js';

export type Environment = Static<typeof EnvironmentSchema>;
export type Meta = Static<typeof MetaSchema>;
export type ErrorEnvelope = Static<typeof ErrorEnvelopeSchema>;
export type Profile = Static<typeof R.ProfileSchema>;
export type Event = Static<typeof R.EventSchema>;
export type Quarantined = Static<typeof R.QuarantinedSchema>;
export type CatalogEvent = Static<typeof R.CatalogEventSchema>;
export type CatalogTrait = Static<typeof R.CatalogTraitSchema>;
export type Promoted = Static<typeof R.PromotedSchema>;
export type Dropped = Static<typeof R.DroppedSchema>;
export type App = Static<typeof R.AppSchema>;
export type Source = Static<typeof R.SourceSchema>;
export type TraitPredicate = Static<typeof R.TraitPredicateSchema>;
export type EventPredicate = Static<typeof R.EventPredicateSchema>;
export type EventPredicateInput = Static<typeof R.EventPredicateInputSchema>;
export type Predicate = Static<typeof R.PredicateSchema>;
export type PredicateInput = Static<typeof R.PredicateInputSchema>;
export type Definition = Static<typeof R.DefinitionSchema>;
export type DefinitionInput = Static<typeof R.DefinitionInputSchema>;
export type Segment = Static<typeof R.SegmentSchema>;
export type SegmentWithCount = Static<typeof R.SegmentWithCountSchema>;
export type SegmentMember = Static<typeof R.SegmentMemberSchema>;
export type SegmentPreview = Static<typeof R.SegmentPreviewSchema>;
export type Deleted = Static<typeof R.DeletedSchema>;
export type JournalCall = Static<typeof J.JournalCallSchema>;
export type JournalResult = Static<typeof J.JournalResultSchema>;
export type JournalEntry = Static<typeof J.JournalEntrySchema>;
export type LogEntry = Static<typeof J.LogEntrySchema>;
export type Execution = Static<typeof J.ExecutionSchema>;
export type ExecutionDetail = Static<typeof J.ExecutionDetailSchema>;
export type SpineStep = Static<typeof J.SpineStepSchema>;
export type Trigger = Static<typeof J.TriggerSchema>;
export type JourneyEntry = Static<typeof J.JourneyEntrySchema>;
export type JourneyEntryInput = Static<typeof J.JourneyEntryInputSchema>;
export type TemplateEntry = Static<typeof J.TemplateEntrySchema>;
export type TemplateEntryInput = Static<typeof J.TemplateEntryInputSchema>;
export type PurposeEntry = Static<typeof J.PurposeEntrySchema>;
export type Manifest = Static<typeof J.ManifestSchema>;
export type ManifestInput = Static<typeof J.ManifestInputSchema>;
export type Version = Static<typeof J.VersionSchema>;
export type Push = Static<typeof J.PushSchema>;
export type Artifact = Static<typeof J.ArtifactSchema>;
export type Journey = Static<typeof J.JourneySchema>;
export type Email = Static<typeof J.EmailSchema>;
export type Webhook = Static<typeof J.WebhookSchema>;
export type WebhookDelivery = Static<typeof J.WebhookDeliverySchema>;
export type Org = Static<typeof O.OrgSchema>;
export type OrgLimits = Static<typeof O.OrgLimitsSchema>;
export type OrgUpdated = Static<typeof O.OrgUpdatedSchema>;
export type OrgCreated = Static<typeof O.OrgCreatedSchema>;
export type Session = Static<typeof O.SessionSchema>;
export type Settings = Static<typeof O.SettingsSchema>;
export type UsersMe = Static<typeof O.UsersMeSchema>;
export type HealthLive = Static<typeof O.HealthLiveSchema>;
export type HealthReady = Static<typeof O.HealthReadySchema>;
export type BatchResult = Static<typeof O.BatchResultSchema>;

/**
 * Generated validators, by name `<routeId>_body`, `<routeId>_query`, `<routeId>_params`
 * (present only for the parts a route declares). Query and params validators coerce strings to the
 * declared types and all validators fill in `default`s, both in place on the validated object.
 */
export type Validators = { [name: string]: ValidateFunction };

export function loadValidators(): Validators {
  return createRequire(import.meta.url)('./generated/validators.cjs') as Validators;
}

/** The OpenAPI 3.1 document served at /openapi.json (read once per service). */
export function loadOpenApi(): object {
  return JSON.parse(readFileSync(new URL('./generated/openapi.json', import.meta.url), 'utf8')) as object;
}
