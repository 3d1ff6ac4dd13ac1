// Routes of the `sources` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, Nullable, StringEnum } from '../common.js';
import { DeletedSchema, SourceSchema, WriteKeySchema } from '../resources.js';
import { json, Params, route, text } from './define.js';

const SvixHeaders = Type.Object({
  'svix-id': Type.Optional(Type.String()),
  'svix-timestamp': Type.Optional(Type.String()),
  'svix-signature': Type.Optional(Type.String()),
  'webhook-id': Type.Optional(Type.String({ description: 'Alternative name of `svix-id`.' })),
  'webhook-timestamp': Type.Optional(Type.String({ description: 'Alternative name of `svix-timestamp`.' })),
  'webhook-signature': Type.Optional(Type.String({ description: 'Alternative name of `svix-signature`.' })),
});

const IdpEvent = Type.Object(
  {
    type: StringEnum(['user.created', 'user.updated', 'user.deleted'] as const),
    data: Type.Object({
      id: Type.String(),
      email_addresses: Type.Optional(Type.Array(Type.Object({ email_address: Type.String() }))),
      first_name: Type.Optional(Nullable(Type.String())),
      last_name: Type.Optional(Nullable(Type.String())),
    }),
  },
  { title: 'IdpUserEvent' },
);

export const sourceRoutes = [
  route({
    id: 'sourcesGet', method: 'GET', path: '/v1/sources/{id}', tag: 'sources', auth: ['session'],
    summary: 'Fetch a source',
    params: Params('id'),
    ok: { 200: json('The Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'sourcesUpdate', method: 'PATCH', path: '/v1/sources/{id}', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Set or rotate a source\'s config',
    description: 'Replaces `config`. A `signingSecret` inside it is write-only; `configured` reports whether one is stored.',
    params: Params('id'),
    body: Body(Type.Object({ config: Type.Unknown({ description: 'Any JSON value.' }) })),
    ok: { 200: json('The Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'sourcesDelete', method: 'DELETE', path: '/v1/sources/{id}', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Archive a source',
    description: 'Sets `archivedAt`. Calls carrying the archived source id are refused with 403; ingestion resumes only through a fresh `api` source with a new id.',
    params: Params('id'),
    ok: { 200: json('The archived Source.', Data(SourceSchema)) },
  }),
  route({
    id: 'sourcesWebhook', method: 'POST', path: '/v1/sources/{sourceId}/webhook', tag: 'sources', auth: ['signature'],
    summary: 'Identity-provider webhook receiver',
    description:
      'Public: no bearer. Accepts identity-provider user events signed with the Standard Webhooks / Svix scheme: headers `svix-id`, `svix-timestamp`, `svix-signature` ' +
      '(or the `webhook-*` names); secret = the source\'s `config.signingSecret` (`whsec_` + base64); timestamp tolerance 5 minutes. ' +
      '`user.created` / `user.updated` identify the profile with `idpId = data.id` (and `email` from the first e-mail address), setting traits `email`, `firstName`, `lastName`; ' +
      '`user.deleted` sets trait `deleted = true`. A source with no secret configured refuses every call with 401. Answers are plain text, not the envelope.',
    params: Params('sourceId'),
    headers: SvixHeaders,
    rawBody: 'application/json',
    rawBodySchema: IdpEvent,
    autoErrors: false,
    ok: {
      200: text('`ok`'),
      400: text('`bad payload` (also for a message id over 192 characters: it becomes the call\'s messageId)'),
      401: text('`invalid signature` (also when the source has no secret configured)'),
      403: text('`source archived`'),
      404: text('`unknown source`'),
    },
  }),
  route({
    id: 'writeKeysCreate', method: 'POST', path: '/v1/sources/{id}/write-keys', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Create a write key for a source',
    description:
      'A write key is the credential of Segment\'s SDKs (`/segment/v1/...`): valid only there and only into this source, public by nature. ' +
      'A source may have several live keys, so a key can be rotated without a gap. The key appears in this answer only (only its sha256 is stored). ' +
      'The body may be empty or `{ "data": {} }`.',
    params: Params('id'),
    body: Body(Type.Object({})),
    optionalBody: true,
    ok: { 201: json('The WriteKey, `writeKey` included.', Data(WriteKeySchema)) },
    errors: { 409: '`conflict`: the source is archived.' },
  }),
  route({
    id: 'writeKeysList', method: 'GET', path: '/v1/sources/{id}/write-keys', tag: 'sources', auth: ['session'],
    summary: 'List a source\'s live write keys',
    description: 'Oldest first. `writeKey` is null (only its hash is stored); `prefix` tells keys apart.',
    params: Params('id'),
    ok: { 200: json('The live write keys.', Data(Type.Array(WriteKeySchema))) },
  }),
  route({
    id: 'writeKeysDelete', method: 'DELETE', path: '/v1/sources/{id}/write-keys/{keyId}', tag: 'sources', auth: ['session'], admin: true,
    summary: 'Delete a write key',
    description: 'Every front end refuses the key (401) within a second.',
    params: Params('id', 'keyId'),
    ok: { 200: json('Deleted.', Data(DeletedSchema)) },
  }),
];
