// Routes of the `users` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, StringEnum, WithDefault } from '../common.js';
import { SessionSchema, RotatedCredentialSchema, SessionsRevokedSchema, UsersMeSchema } from '../org-resources.js';
import { json, route } from './define.js';

export const sessionRoutes = [
  route({
    id: 'sessionsExchange', method: 'POST', path: '/v1/sessions/exchange', tag: 'users', auth: ['none'],
    summary: 'Trade a login link for a session',
    description: 'No bearer: the body carries the login token of `POST /v1/orgs/{orgId}/login-links`. Answers a session of its org, role and user. ' +
      'Each login token is exchanged once; an expired, used, revoked (`POST /v1/sessions/revoke`) or forged one is 401 `invalid_key`.',
    body: Body(Type.Object({ loginToken: Type.String({ minLength: 1, maxLength: 4096 }) })),
    ok: { 201: json('The session.', Data(SessionSchema)) },
    errors: { 401: '`invalid_key`: the login token is invalid, expired, already used or revoked.' },
  }),
  route({
    id: 'credentialsRotate', method: 'POST', path: '/v1/credentials/rotate', tag: 'users', auth: ['session'], admin: true,
    summary: 'Rotate an org key',
    description: 'Issues a new key of `kind` and answers its secret, shown only here (the service keeps its sha256). Every current key of that kind ' +
      'keeps working until `expiresOldAt` (now + `graceSeconds`, default 0, at most 86400) and answers 401 `invalid_key` after it. ' +
      'The process that answers applies it at once; other processes sharing the database re-read a cached key at least every 5 seconds, ' +
      'so an old key is refused everywhere at most 5 s after `expiresOldAt`.',
    body: Body(Type.Object({
      kind: StringEnum(['apiKey', 'deployKey', 'pipelineKey'] as const),
      graceSeconds: Type.Optional(WithDefault(Type.Integer({ minimum: 0, maximum: 86400, default: 0, description: 'How long the old key keeps working.' }))),
    })),
    ok: { 200: json('The new key (shown once) and when the old one stops working.', Data(RotatedCredentialSchema)) },
  }),
  route({
    id: 'sessionsRevoke', method: 'POST', path: '/v1/sessions/revoke', tag: 'users', auth: ['session'], admin: true,
    summary: 'Revoke every session of the org',
    description: 'Every built-in session (and unused login link) of the org issued before `revokedBefore`, the caller\'s own included, answers 401 `invalid_key` from then on; ' +
      'the operator can still issue new ones (`POST /v1/orgs/{orgId}/sessions`). Other processes sharing the database apply it within 5 seconds. ' +
      'Tokens of an external identity provider are revoked at that provider.',
    optionalBody: true,
    body: Body(Type.Object({})),
    ok: { 200: json('The cut-off instant.', Data(SessionsRevokedSchema)) },
  }),
];

export const usersMeRoutes = [
  route({
    id: 'usersMe', method: 'GET', path: '/v1/users/me', tag: 'users', auth: ['session', 'apiKey', 'deployKey', 'pipelineKey'],
    summary: 'Who am I',
    description: 'Accepts every org credential, so that tools learn their org. `role` and `userId` are null for keys.',
    ok: { 200: json('The caller.', Data(UsersMeSchema)) },
  }),
];
