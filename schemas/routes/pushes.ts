// Routes of the `pushes` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, List, PageQueryProps } from '../common.js';
import { ManifestInputSchema, PushSchema } from '../journey-resources.js';
import { json, Params, route } from './define.js';

export const pushRoutes = [
  route({
    id: 'pushesCreate', method: 'POST', path: '/v1/pushes', tag: 'pushes', auth: ['session', 'pipelineKey'],
    summary: 'Push a project',
    description:
      'Stores the project\'s manifest and files a new version of every journey and template whose `bundle` differs from the latest version of that key (keys are unique per org and kind); ' +
      'an unchanged key gets none. Returns once stored; versions then compile asynchronously, each on its own. A push turns nothing on: enabling is `PATCH /v1/journeys/{key}`. ' +
      '`bundle` and `source` digests must name stored artifacts of the org, `appId` an active app of the org, `orgId` the org of the credential, and keys must be unique per kind within the manifest, ' +
      'else 422 `validation_failed` naming each offending field (JSON pointer). A push whose bundles are all unchanged is still recorded, with no versions (`totalEntries` 0). ' +
      'Accepts a session (any role) or the org pipeline key; `createdBy` is the session\'s user id or `pipelineKey`, `createdByScheme` the credential kind and `createdByRole` the session\'s role (null for the pipeline key). ' +
      'A ready version of an enabled journey runs at once whoever pushed it: the service logs `journey version live` with the journey, version, push and author. ' +
      'Compilation: each version\'s bundle (an ES module, self-contained, default-exporting the definition) is loaded once in a sandbox (memory cap, 2 s load deadline); ' +
      'it becomes `ready` with a `moduleDigest` when its default export is a definition of the entry\'s kind and key, else `failed` with `error` saying why. One failing version costs only its own key.',
    body: Body(Type.Object({
      manifest: ManifestInputSchema,
      appId: Type.String({ maxLength: 200 }),
      orgId: Type.String({ maxLength: 200 }),
    })),
    ok: { 201: json('The Push with its versions.', Data(PushSchema)) },
  }),
  route({
    id: 'pushesList', method: 'GET', path: '/v1/pushes', tag: 'pushes', auth: ['session'],
    summary: 'List pushes, newest first',
    description: 'Each push with its versions. `appId` keeps the pushes of that app.',
    query: Type.Object({ ...PageQueryProps, appId: Type.Optional(Type.String({ maxLength: 200 })) }),
    ok: { 200: json('A page of pushes, newest first.', List(PushSchema)) },
  }),
  route({
    id: 'pushesGet', method: 'GET', path: '/v1/pushes/{id}', tag: 'pushes', auth: ['session'],
    summary: 'Fetch a push with its versions',
    params: Params('id'),
    ok: { 200: json('The Push.', Data(PushSchema)) },
  }),
  route({
    id: 'pushesSource', method: 'GET', path: '/v1/pushes/{id}/source', tag: 'pushes', auth: ['session'],
    summary: 'Download a push\'s source archive',
    description: 'The stored source artifact, byte for byte, as `application/gzip` (`x-content-digest: sha256=<digest>`).',
    params: Params('id'),
    ok: {
      200: {
        description: 'The stored source artifact (a gzip tarball).',
        contentType: 'application/gzip',
        schema: Type.Unsafe<string>({ type: 'string', contentMediaType: 'application/gzip' }),
      },
    },
  }),
];
