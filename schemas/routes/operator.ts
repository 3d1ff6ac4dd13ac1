// Routes of the `operator` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, DateTime, Nullable, WithDefault } from '../common.js';
import { Role } from '../resources.js';
import {
  OrgCreatedSchema, OrgUpdatedSchema, QUOTA_MEMBERS, ReconciliationSchema, SessionSchema, LoginLinkSchema,
} from '../org-resources.js';
import { json, Params, route, text } from './define.js';

export const metricsRoutes = [
  route({
    id: 'metrics', method: 'GET', path: '/metrics', tag: 'operator', auth: ['operator'],
    summary: 'Prometheus metrics of this process',
    description: 'Prometheus text exposition format (prom-client). Operator token only; with `HEADWATER_METRICS_PORT` set, ' +
      'the same text is also served without a credential on that port (`headwater worker` processes serve theirs only there). ' +
      'Request rates and latencies per route, calls by outcome, the ingestion backlog and refusals, stream lag, worker-pool ' +
      'utilization, batch and insert latencies, Postgres pool waits, runner and outbox backlogs, purposeful drops. docs/scaling.md says which to watch.',
    ok: { 200: text('Metrics in the Prometheus text format.') },
  }),
];

export const orgRoutes = [
  route({
    id: 'orgsCreate', method: 'POST', path: '/v1/orgs', tag: 'operator', auth: ['operator'],
    summary: 'Create an organization',
    description: 'Operator token only. Answers the org and its credentials; secrets are shown only here (the service stores hashes).',
    body: Body(Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) })),
    ok: { 201: json('The org and its credentials.', Data(OrgCreatedSchema)) },
  }),
  route({
    id: 'orgsSessionsCreate', method: 'POST', path: '/v1/orgs/{orgId}/sessions', tag: 'operator', auth: ['operator'],
    summary: 'Issue a session token',
    description: 'Operator token only. Signs a session JWT for the org with the given role.',
    params: Params('orgId'),
    body: Body(Type.Object({ role: Role, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) })),
    ok: { 201: json('The session.', Data(SessionSchema)) },
  }),
  route({
    id: 'orgsLoginLinksCreate', method: 'POST', path: '/v1/orgs/{orgId}/login-links', tag: 'operator', auth: ['operator'],
    summary: 'Issue a dashboard login link',
    description: 'Operator token only (`headwater dashboard` calls it). Signs a single-use login token that expires after 5 minutes; ' +
      'the dashboard opens `URL/ui/#login=<loginToken>` and trades it for a session with `POST /v1/sessions/exchange`. ' +
      'A login token is no session: every other route answers it 401 `invalid_key`, so a leaked link is dead once used or expired.',
    params: Params('orgId'),
    body: Body(Type.Object({ role: Role, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) })),
    ok: { 201: json('The login token.', Data(LoginLinkSchema)) },
  }),
];

export const orgAdminRoutes = [
  route({
    id: 'orgsUpdate', method: 'PATCH', path: '/v1/orgs/{orgId}', tag: 'operator', auth: ['operator'],
    summary: 'Set an org\'s limits',
    description: 'Operator token only. A partial `limits` object changes only the given members. Rate and monthly limits take effect within one second; ' +
      'the quotas (artifactBytes, journeys, webhooks, segments, runningExecutions) at the next write they govern. A write past a quota answers 429 `over_quota` naming the limit.',
    params: Params('orgId'),
    body: Body(Type.Object({
      limits: Type.Object({
        ratePerSecond: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1000000000, description: 'Token-bucket refill rate per API key (at most 10^9).' })),
        burst: Type.Optional(Type.Number({ minimum: 1, maximum: 1000000000, description: 'Token-bucket size per API key (at most 10^9).' })),
        monthlyEvents: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 9007199254740991 }), { description: 'Accepted track calls per month (at most 2^53 - 1); null for unlimited.' })),
        artifactBytes: Type.Optional(QUOTA_MEMBERS.artifactBytes),
        journeys: Type.Optional(QUOTA_MEMBERS.journeys),
        webhooks: Type.Optional(QUOTA_MEMBERS.webhooks),
        segments: Type.Optional(QUOTA_MEMBERS.segments),
        runningExecutions: Type.Optional(QUOTA_MEMBERS.runningExecutions),
      }),
    })),
    ok: { 200: json('The org and its limits.', Data(OrgUpdatedSchema)) },
  }),
  route({
    id: 'eventsReconcile', method: 'POST', path: '/v1/events/reconcile', tag: 'operator', auth: ['operator'],
    summary: 'Compare acknowledged events with the event store',
    description: 'Operator token only (`headwater doctor` calls it). Every track event acknowledged in the window ' +
      '(its answer stored in Postgres between `since` inclusive and `until` exclusive, at most 24 hours apart) is looked up in ' +
      'ClickHouse by id; the answer counts them, lists the missing ones and says how many extra copies FINAL collapses. ' +
      '`drops` counts what the pipeline dropped or collapsed on purpose since the database was created. With `repair: true` ' +
      'the missing events are landed from their stored copies (journey triggers included), as a restart lands events answered before a stop. ' +
      'Events answered in the last seconds may still be on their way: end the window a minute ago.',
    body: Body(Type.Object({
      since: DateTime,
      until: DateTime,
      orgId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Only this org (default: every org).' })),
      repair: Type.Optional(WithDefault(Type.Boolean({ default: false }))),
      limit: Type.Optional(WithDefault(Type.Integer({ minimum: 0, maximum: 1000, default: 100, description: 'Missing events listed at most.' }))),
    })),
    ok: { 200: json('The reconciliation of the window.', Data(ReconciliationSchema)) },
  }),
];
