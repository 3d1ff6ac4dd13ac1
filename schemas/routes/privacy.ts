// Privacy and data lifecycle routes: erasure, suppression, export (docs/privacy.md). Built with
// ./define.ts.
import { Type } from '@sinclair/typebox';
import { json, route } from './define.js';
import { Body, Data, DateTime, Id, List, Nullable, PageQuery, StringEnum, WithDefault } from '../common.js';
import { IdentifierKind } from '../resources.js';

export const ErasureSchema = Type.Object(
  {
    id: Type.String({ description: 'Prefixed `era_`.' }),
    orgId: Id,
    profileId: Id,
    identifiers: Type.Array(Type.Object({ kind: IdentifierKind, value: Type.String() }), {
      description: 'The identifiers of the profile and of the records merged into it, at request time (the record of the request).',
    }),
    suppress: Type.Boolean({ description: 'Whether the identifiers were added to the suppression list.' }),
    status: StringEnum(['pending', 'completed'] as const, {
      description: '`pending`: the job is running or waiting for a process (it survives restarts); `completed`: every step finished and no route shows the profile\'s data any more.',
    }),
    requestedAt: DateTime,
    completedAt: Nullable(DateTime),
  },
  { title: 'Erasure' },
);

export const SuppressionSchema = Type.Object(
  {
    id: Type.String({ description: 'Prefixed `sup_`.' }),
    kind: IdentifierKind,
    hash: Type.String({ description: 'sha256 of the identifier value (UTF-8), lowercase hex. The value itself is not stored.' }),
    createdAt: DateTime,
    erasureId: Nullable(Type.String(), { description: 'The erasure that suppressed it.' }),
  },
  { title: 'Suppression' },
);


const IdParams = Type.Object({ id: Type.String() });

export const privacyRoutes = [
  route({
    id: 'profilesErase', method: 'POST', path: '/v1/profiles/{id}/erase', tag: 'privacy', auth: ['session'], admin: true,
    summary: 'Erase a profile',
    description:
      'Files a durable erasure job for the profile and the profiles merged into it: identifiers, traits, consent, memberships, merged records, ' +
      'events (ClickHouse and every Postgres copy: stored answers, segment history, held and refused calls), executions with their journals and logs ' +
      '(running and waiting ones are cancelled first), and the bodies and recipients of their e-mails and webhook deliveries (counts and statuses stay; ' +
      'one not sent yet is marked `failed`). The job survives restarts and is idempotent; once `completed` no route shows the erased data. ' +
      'A pending erasure of the same profile is answered again instead of a second one. ' +
      'With `suppress: true` the identifiers\' sha256 hashes join the suppression list in the same transaction: from this answer on, writes carrying them are refused.',
    params: IdParams,
    body: Body(Type.Object({ suppress: Type.Optional(WithDefault(Type.Boolean({ default: false }))) }, { additionalProperties: false })),
    optionalBody: true,
    ok: { 202: json('The Erasure (`pending`).', Data(ErasureSchema)) },
    errors: { 404: '`not_found`: also an already erased profile.' },
  }),
  route({
    id: 'erasuresList', method: 'GET', path: '/v1/erasures', tag: 'privacy', auth: ['session'],
    summary: 'List erasures, newest first',
    query: PageQuery,
    ok: { 200: json('A page of erasures.', List(ErasureSchema)) },
  }),
  route({
    id: 'erasuresGet', method: 'GET', path: '/v1/erasures/{id}', tag: 'privacy', auth: ['session'],
    summary: 'Fetch an erasure',
    params: IdParams,
    ok: { 200: json('The Erasure.', Data(ErasureSchema)) },
  }),
  route({
    id: 'suppressionsList', method: 'GET', path: '/v1/suppressions', tag: 'privacy', auth: ['session'],
    summary: 'List suppressed identifiers, newest first',
    description: 'Calls carrying a suppressed identifier are refused on every write path: `/v1` identify, track and batch answer 403 `forbidden` ' +
      '(`identifier suppressed`, per call in a batch), the source receiver likewise, `/segment/v1` answers 200 as Segment does and keeps the refusal ' +
      'with its other rejections, and a journey\'s `traits.set` / `events.track` gets a journal error result. Nothing of a refused call is stored.',
    query: PageQuery,
    ok: { 200: json('A page of suppressions.', List(SuppressionSchema)) },
  }),
  route({
    id: 'suppressionsDelete', method: 'DELETE', path: '/v1/suppressions/{id}', tag: 'privacy', auth: ['session'], admin: true,
    summary: 'Lift a suppression',
    description: 'Writes carrying the identifier are accepted again (at once in this process, within a second in others).',
    params: IdParams,
    ok: { 200: json('Deleted.', Data(Type.Object({ deleted: Type.Literal(true) }, { title: 'Deleted' }))) },
  }),
  route({
    id: 'profilesExport', method: 'GET', path: '/v1/profiles/{id}/export', tag: 'privacy', auth: ['session'], admin: true,
    summary: 'Export a profile (NDJSON)',
    description:
      'Streams `application/x-ndjson`, one JSON object per line: first `{ "type": "profile", ... }` (the Profile with its identifiers, traits, consent, ' +
      'memberships and `merged`, the records merged into it), then one `{ "type": "event", ... }` per event (oldest first, the merged records\' included), ' +
      'one `{ "type": "execution", ... }` per execution (with `journal` and `logs`), and one `{ "type": "email", ... }` per e-mail of those executions. ' +
      'The answer is written as the client reads it: a history of any length is never held in memory whole. ' +
      'Admin only (it is the person\'s data).',
    params: IdParams,
    ok: { 200: { description: 'The NDJSON stream.', contentType: 'application/x-ndjson' } },
  }),
];
