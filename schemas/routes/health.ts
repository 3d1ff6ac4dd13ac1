// Routes of the `health` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { AnyObject, Data } from '../common.js';
import { HealthLiveSchema, HealthReadySchema } from '../org-resources.js';
import { json, route } from './define.js';

export const healthRoutes = [
  route({
    id: 'healthLive', method: 'GET', path: '/health/live', tag: 'health', auth: ['none'],
    summary: 'Liveness probe',
    ok: { 200: json('The process is up.', Data(HealthLiveSchema)) },
  }),
  route({
    id: 'healthReady', method: 'GET', path: '/health/ready', tag: 'health', auth: ['none'],
    summary: 'Readiness probe',
    description: 'Checks each configured dependency by name (`postgres`, `clickhouse`, `nats`) and names the HTTP front end serving (`frontEnd`: `uws`, or `node:http` where no uWebSockets.js build loads or `HEADWATER_FRONT_END=node`).',
    ok: { 200: json('Every configured dependency answers.', Data(HealthReadySchema)) },
    errors: { 503: '`dependency_unavailable`: a configured dependency does not answer.' },
  }),
  route({
    id: 'openapi', method: 'GET', path: '/openapi.json', tag: 'health', auth: ['none'],
    summary: 'This OpenAPI 3.1 document',
    description: 'Not wrapped in the envelope.',
    ok: { 200: json('The OpenAPI 3.1 document describing this contract.', AnyObject()) },
  }),
];
