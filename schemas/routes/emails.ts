// Routes of the `emails` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, List, PageQueryProps, StringEnum } from '../common.js';
import { EmailSchema } from '../journey-resources.js';
import { Filter, json, Params, route } from './define.js';

export const emailRoutes = [
  route({
    id: 'emailsList', method: 'GET', path: '/v1/emails', tag: 'emails', auth: ['session'],
    summary: 'List e-mails, newest first',
    description:
      '`ctx.email.send` renders the template version for `template` with `props` (validated against its `propsSchema`) and records the message here. ' +
      'With an SMTP transport configured (`SMTP_URL`) it is `pending` until the transport accepts it (`sent`), retried with exponential backoff on failure, ' +
      'and `failed` on a permanent refusal or when its attempts run out; without one it is `stored` in the local outbox and never sent. ' +
      'Delivery towards SMTP is at least once: every attempt carries the same `Message-ID` header. Session of any role; the deploy key is refused (403 `deploy_key_scope`: recipients and bodies are not part of the release lifecycle). ' +
      'Filters: `status`, `executionId`, `to` (exact, case-insensitive).',
    query: Type.Object({
      ...PageQueryProps,
      status: Type.Optional(StringEnum(['pending', 'sent', 'failed', 'stored'] as const)),
      executionId: Type.Optional(Filter),
      to: Type.Optional(Filter),
    }),
    ok: { 200: json('A page of e-mails, newest first.', List(EmailSchema)) },
  }),
  route({
    id: 'emailsGet', method: 'GET', path: '/v1/emails/{id}', tag: 'emails', auth: ['session'],
    summary: 'Fetch an e-mail',
    params: Params('id'),
    ok: { 200: json('The Email.', Data(EmailSchema)) },
  }),
  route({
    id: 'emailsTest', method: 'POST', path: '/v1/emails/test', tag: 'emails', auth: ['session'], admin: true,
    summary: 'Send a test e-mail',
    description:
      'Checks the SMTP settings: records an e-mail to `to` (`template` empty, `executionId` null) and answers it at once; the sender then hands it to the transport ' +
      'like any journey e-mail (retries included). Without `SMTP_URL` it is recorded `stored` and not sent. Follow it with `GET /v1/emails/{id}`.',
    body: Body(Type.Object({
      to: Type.String({ format: 'email', maxLength: 254 }),
      subject: Type.Optional(Type.String({ maxLength: 200, pattern: '^[^\\r\\n]*$', description: 'One line (default `Headwater test e-mail`).' })),
      text: Type.Optional(Type.String({ maxLength: 10000, description: 'Plain-text body (default: a line naming the org).' })),
    })),
    ok: { 202: json('The recorded Email (`pending`, or `stored` without a transport).', Data(EmailSchema)) },
  }),
];
