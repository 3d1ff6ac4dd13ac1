// Routes of the `apps` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { AnyObject, Body, Data, List, PageQuery, SearchPageQuery, StringEnum, TaggedUnion, WithDefault } from '../common.js';
import { AppSchema, CreatedAppSchema, SourceSchema } from '../resources.js';
import { json, Params, route } from './define.js';

const AppName = Type.String({ minLength: 1, maxLength: 100 });
const SourceCreateData = TaggedUnion('kind', [
  Type.Object({ kind: Type.Literal('api'), config: Type.Optional(AnyObject({ default: {} })) }, { title: 'ApiSourceInput' }),
  Type.Object(
    {
      kind: Type.Literal('idp'),
      config: Type.Optional(Type.Object(
        { signingSecret: Type.Optional(Type.String({ minLength: 1, description: 'Write-only. `whsec_` + base64 (Standard Webhooks / Svix).' })) },
        { default: {} },
      )),
    },
    { title: 'IdpSourceInput' },
  ),
]);

export const appRoutes = [
  route({
    id: 'appsCreate', method: 'POST', path: '/v1/apps', tag: 'apps', auth: ['session'], admin: true,
    summary: 'Create an app',
    description: 'Every app is created together with its first-party `api` source; the answer lists it in `sources` (its `id` is the `sourceId` of ingestion calls).',
    body: Body(Type.Object({ name: AppName, environment: Type.Optional(WithDefault(StringEnum(['development', 'production'] as const, { default: 'production' }))) })),
    ok: { 201: json('The App with its default source.', Data(CreatedAppSchema)) },
  }),
  route({
    id: 'appsList', method: 'GET', path: '/v1/apps', tag: 'apps', auth: ['session'],
    summary: 'List apps',
    query: Type.Object({ ...SearchPageQuery.properties, status: Type.Optional(WithDefault(StringEnum(['active', 'archived', 'all'] as const, { default: 'all' }))) }),
    ok: { 200: json('A page of apps.', List(AppSchema)) },
  }),
  route({
    id: 'appsGet', method: 'GET', path: '/v1/apps/{id}', tag: 'apps', auth: ['session'],
    summary: 'Fetch an app',
    params: Params('id'),
    ok: { 200: json('The App.', Data(AppSchema)) },
  }),
  route({
    id: 'appsUpdate', method: 'PATCH', path: '/v1/apps/{id}', tag: 'apps', auth: ['session'], admin: true,
    summary: 'Rename or archive an app',
    description: '`status` accepts only `archived` (sets `archivedAt`); there is no route back to active.',
    params: Params('id'),
    body: Body(Type.Object({ name: Type.Optional(AppName), status: Type.Optional(StringEnum(['archived'] as const)) })),
    ok: { 200: json('The App.', Data(AppSchema)) },
  }),
  route({
    id: 'appSourcesCreate', method: 'POST', path: '/v1/apps/{appId}/sources', tag: 'apps', auth: ['session'], admin: true,
    summary: 'Create a source under an app',
    description: 'An `api` source is a first-party ingestion pipe; an `idp` source receives identity-provider webhooks at `POST /v1/sources/{sourceId}/webhook`. The signing secret is write-only.',
    params: Params('appId'),
    body: Body(SourceCreateData),
    ok: { 201: json('The Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'appSourcesList', method: 'GET', path: '/v1/apps/{appId}/sources', tag: 'apps', auth: ['session'],
    summary: 'List an app\'s sources',
    params: Params('appId'),
    query: PageQuery,
    ok: { 200: json('A page of sources.', List(SourceSchema)) },
  }),
];
