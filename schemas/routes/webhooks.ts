// Routes of the `webhooks` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { AnyObject, Body, Data, List, PageQuery, SearchPageQuery } from '../common.js';
import { DeletedSchema } from '../resources.js';
import { WebhookDeliverySchema, WebhookSchema } from '../journey-resources.js';
import { json, Params, route } from './define.js';

const WebhookUrl = Type.String({
  format: 'uri',
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
  description: 'An http(s) URL (any other scheme is 422 `validation_failed`). At delivery the host is resolved and every address checked: loopback, private, link-local (cloud metadata), unique-local, carrier-grade NAT, multicast and unspecified targets are refused, which fails the delivery with the reason in `lastError` and sends nothing, unless the operator allows them (`HEADWATER_WEBHOOK_ALLOW_PRIVATE=true`). Redirects are never followed.',
});
const WebhookName = Type.String({ minLength: 1, maxLength: 100, description: 'Unique per org; journeys reference the webhook by this name.' });

export const webhookRoutes = [
  route({
    id: 'webhooksCreate', method: 'POST', path: '/v1/webhooks', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Register a webhook',
    description:
      'The answer carries `signingSecret` (`whsec_` + base64 of 32 random bytes), shown only here; the service keeps it encrypted. ' +
      'Deliveries follow Standard Webhooks: a POST of `{ v: 1, id, type, timestamp, data }` (`type` `journey.webhook` for journey sends, `webhook.test` for test sends) with the headers ' +
      '`webhook-id` (the delivery id, the same on every retry), `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed by the base64-decoded secret after `whsec_`). ' +
      'A 2xx answer is success; anything else (3xx included: redirects are not followed), a network error or a timeout (15 s by default) is a failed attempt. ' +
      'Delivery is at least once: an attempt can reach the receiver and still fail here (the answer came after the timeout, or the connection broke), and it is then sent again with the same `webhook-id` and body, so receivers deduplicate by `webhook-id`. ' +
      'Failed attempts are retried with exponential backoff and jitter (5 attempts by default; a 429 or 503 `Retry-After` is honoured). ' +
      'After 5 consecutive failed deliveries (configurable) the webhook disables itself (`disabledAt` set) and its deliveries are recorded `skipped_disabled` until `PATCH` with `enabled: true`. ' +
      'Names are unique per org (journeys reference a webhook by name).',
    body: Body(Type.Object({ name: WebhookName, config: Type.Object({ url: WebhookUrl }) })),
    ok: { 201: json('The Webhook including `signingSecret`.', Data(WebhookSchema)) },
    errors: { 409: '`conflict`: a webhook of that name exists.' },
  }),
  route({
    id: 'webhooksList', method: 'GET', path: '/v1/webhooks', tag: 'webhooks', auth: ['session'],
    summary: 'List webhooks',
    query: SearchPageQuery,
    ok: { 200: json('A page of webhooks.', List(WebhookSchema)) },
  }),
  route({
    id: 'webhooksGet', method: 'GET', path: '/v1/webhooks/{id}', tag: 'webhooks', auth: ['session'],
    summary: 'Fetch a webhook',
    params: Params('id'),
    ok: { 200: json('The Webhook.', Data(WebhookSchema)) },
  }),
  route({
    id: 'webhooksUpdate', method: 'PATCH', path: '/v1/webhooks/{id}', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Update, enable or disable a webhook',
    description: '`enabled: true` re-enables an (auto-)disabled webhook and resets its failure count; `enabled: false` disables it.',
    params: Params('id'),
    body: Body(Type.Object({
      name: Type.Optional(WebhookName),
      config: Type.Optional(Type.Object({ url: WebhookUrl })),
      enabled: Type.Optional(Type.Boolean()),
    })),
    ok: { 200: json('The Webhook.', Data(WebhookSchema)) },
    errors: { 409: '`conflict`: a webhook of that name exists.' },
  }),
  route({
    id: 'webhooksDelete', method: 'DELETE', path: '/v1/webhooks/{id}', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Delete a webhook',
    description: 'Its deliveries go with it; a pending one is not sent.',
    params: Params('id'),
    ok: { 200: json('Deleted.', Data(DeletedSchema)) },
  }),
  route({
    id: 'webhooksTest', method: 'POST', path: '/v1/webhooks/{id}/test', tag: 'webhooks', auth: ['session'], admin: true,
    summary: 'Send a test event',
    description:
      'Records a delivery of type `webhook.test` (`executionId` null) with `data.payload` (default `{}`) as the payload `data`, and answers it at once; ' +
      'the sender then delivers it like any other (signature, retries, auto-disable). While the webhook is disabled the delivery is recorded `skipped_disabled`. ' +
      'Follow it with `GET /v1/webhooks/{id}/deliveries`.',
    params: Params('id'),
    body: Body(Type.Object({ payload: Type.Optional(AnyObject({ description: 'The payload `data` (default `{}`).' })) })),
    ok: { 202: json('The recorded Delivery (`pending`, or `skipped_disabled` while the webhook is disabled).', Data(WebhookDeliverySchema)) },
  }),
  route({
    id: 'webhooksDeliveries', method: 'GET', path: '/v1/webhooks/{id}/deliveries', tag: 'webhooks', auth: ['session'],
    summary: 'List a webhook\'s deliveries, newest first',
    params: Params('id'),
    query: PageQuery,
    ok: { 200: json('A page of deliveries, newest first.', List(WebhookDeliverySchema)) },
  }),
];
