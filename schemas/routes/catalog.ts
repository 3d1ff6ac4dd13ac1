// Routes of the `catalog` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, List, MapOf, PageQuery, SearchPageQuery, StringEnum, WithDefault } from '../common.js';
import {
  CatalogEventSchema, CatalogTraitSchema, DroppedSchema, GovernanceState, PromotedSchema, QuarantineEntrySchema,
  TypeName,
} from '../resources.js';
import { json, route } from './define.js';

const CatalogName = Type.String({ minLength: 1, maxLength: 200 });
const CatalogQuery = Type.Object({ ...SearchPageQuery.properties, state: Type.Optional(GovernanceState) });
const QuarantineBody = Body(Type.Object({ kind: StringEnum(['event', 'trait'] as const), name: Type.String({ minLength: 1 }) }));

export const catalogRoutes = [
  route({
    id: 'catalogEventsCreate', method: 'POST', path: '/v1/catalog/events', tag: 'catalog', auth: ['session'], admin: true,
    summary: 'Register a catalog event',
    body: Body(Type.Object({ name: CatalogName, properties: Type.Optional(WithDefault(MapOf(TypeName, { default: {}, description: 'Property name to type name.' }))) })),
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
];
