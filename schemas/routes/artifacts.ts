// Routes of the `artifacts` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Data, StringEnum } from '../common.js';
import { ArtifactSchema } from '../journey-resources.js';
import { json, none, route } from './define.js';

const Digest = Type.Object({ digest: Type.String({ pattern: '^[0-9a-f]{64}$', description: '64 lowercase hex characters: the sha256 of the bytes.' }) });

export const artifactRoutes = [
  route({
    id: 'artifactsHead', method: 'HEAD', path: '/v1/artifacts/{digest}', tag: 'artifacts', auth: ['session', 'deployKey', 'pipelineKey'],
    summary: 'Does the org have this artifact?',
    description: 'Answered from the stored size, without reading the bytes. No body in any answer. Accepts a session (any role), the org deploy key or the org pipeline key.',
    params: Digest,
    autoErrors: false,
    ok: {
      200: none('The org has the artifact; `content-length` is its size.'),
      401: none('`invalid_key` (no body).'),
      404: none('The org does not have the artifact.'),
      422: none('The digest is not 64 lowercase hex characters (no body).'),
    },
  }),
  route({
    id: 'artifactsPut', method: 'PUT', path: '/v1/artifacts/{digest}', tag: 'artifacts', auth: ['session', 'deployKey', 'pipelineKey'],
    summary: 'Upload an artifact',
    description:
      'The body is the raw bytes (any content type; `content-length` or chunked framing); they must hash (sha256) to the digest, which is checked on every upload, also when the org already has the artifact. ' +
      'The body is streamed to storage as it arrives and never held whole; the artifact size limit (default 32 MiB, `HEADWATER_ARTIFACT_LIMIT`) replaces the global body limit and is answered (413) as soon as it is passed. ' +
      'Artifacts are immutable and deduplicated within an org: a digest is stored once (concurrent uploads of one digest included) and keeps the `kind` of its first upload; another org\'s artifacts are invisible. ' +
      'Accepts a session (any role), the org deploy key or the org pipeline key.',
    params: Digest,
    query: Type.Object({ kind: StringEnum(['bundle', 'source'] as const) }),
    rawBody: 'application/octet-stream',
    omit: [404],
    ok: {
      201: json('Stored.', Data(ArtifactSchema)),
      200: json('Already present.', Data(ArtifactSchema)),
    },
    errors: {
      413: '`artifact_too_large`: the bytes exceed the artifact limit (default 32 MiB).',
      422: '`validation_failed`: the bytes do not hash to the digest.',
    },
  }),
];
