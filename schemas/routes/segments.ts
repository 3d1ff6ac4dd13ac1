// Routes of the `segments` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, Environment, List, Nullable, PageQuery, SearchPageQuery, WithDefault } from '../common.js';
import {
  DefinitionInputSchema, DeletedSchema, PREDICATE_SEMANTICS, SegmentMemberSchema, SegmentPreviewSchema,
  SegmentSchema, SegmentWithCountSchema,
} from '../resources.js';
import { json, Params, route } from './define.js';

const SegmentName = Type.String({ minLength: 1, maxLength: 100 });
const HISTORY_FILL = 'Per-profile event history is kept for the event names some segment of the org names (and system events): ' +
  'a definition naming an event no segment of the org named before first rebuilds that name\'s history from the stored events, ' +
  'and the org\'s ingestion waits for it (a scan of the org\'s stored events). ';
const Environments = Type.Array(Environment, { minItems: 1 });

export const segmentRoutes = [
  route({
    id: 'segmentsCreate', method: 'POST', path: '/v1/segments', tag: 'segments', auth: ['session'], admin: true,
    summary: 'Create a segment',
    description: 'Computes membership immediately over existing profiles (`memberCount` is exact); each resulting entry emits `system.segment_entered`. ' + HISTORY_FILL + PREDICATE_SEMANTICS,
    body: Body(Type.Object({
      name: SegmentName,
      description: Type.Optional(Nullable(Type.String())),
      definition: DefinitionInputSchema,
      environments: Type.Optional(WithDefault(Type.Array(Environment, { minItems: 1, default: ['development', 'production'] }))),
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
    description: 'Every member optional; a given `definition` replaces the old one whole (its `predicates` are required). Membership is recomputed immediately and transitions emit events. ' + HISTORY_FILL,
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
];
