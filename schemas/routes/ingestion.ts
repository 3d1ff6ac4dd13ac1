// Routes of the `ingestion` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { AnyObject, Body, Data, DateTime } from '../common.js';
import { EventSchema, ProfileSchema, QuarantinedSchema } from '../resources.js';
import { BatchResultSchema } from '../org-resources.js';
import { json, route } from './define.js';

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
      // Trait names become catalog names (1 to 200 characters, OpenAPI description, "Limits").
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

export const ingestionRoutes = [
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
];
