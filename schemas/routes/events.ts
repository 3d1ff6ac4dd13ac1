// Routes of the `events` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Data, List, PageQueryProps } from '../common.js';
import { EventSchema, IdentifierKind, ProfileSchema, SegmentMemberSchema } from '../resources.js';
import { Filter, json, Params, route } from './define.js';

export const eventRoutes = [
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
];
