// Routes of the `executions` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, List, PageQueryProps, WithDefault } from '../common.js';
import { ExecutionStatus } from '../resources.js';
import { ExecutionDetailSchema, ExecutionSchema } from '../journey-resources.js';
import { JourneyJournalsSchema } from '../journals.js';
import { Filter, json, Params, route } from './define.js';

export const executionRoutes = [
  route({
    id: 'executionsList', method: 'GET', path: '/v1/executions', tag: 'executions', auth: ['session', 'deployKey'],
    summary: 'List executions, newest first',
    query: Type.Object({
      ...PageQueryProps,
      journey: Type.Optional(Filter),
      release: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A push id (`releaseId`).' })),
      status: Type.Optional(ExecutionStatus),
      profileId: Type.Optional(Filter),
      since: Type.Optional(Type.String({ format: 'date-time', description: 'Executions started at or after this instant.' })),
      converted: Type.Optional(Type.Boolean({ description: 'Only executions that converted on their journey\'s goal (true) or did not (false).' })),
      holdout: Type.Optional(Type.Boolean({ description: 'Only the held-out executions (true) or only the others (false).' })),
      exitReason: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'Only executions that ended for this reason: `event:<name>` (an exit rule) or `goal`.' })),
    }),
    ok: { 200: json('A page of executions, newest first.', List(ExecutionSchema)) },
  }),
  route({
    id: 'executionsGet', method: 'GET', path: '/v1/executions/{id}', tag: 'executions', auth: ['session', 'deployKey'],
    summary: 'Fetch an execution with its journal and logs',
    description: 'The execution record is kept beyond its workflow\'s retention window.',
    params: Params('id'),
    ok: { 200: json('The execution with `journal` and `logs`.', Data(ExecutionDetailSchema)) },
  }),
  route({
    id: 'executionsCancel', method: 'POST', path: '/v1/executions/{id}/cancel', tag: 'executions', auth: ['session', 'deployKey'], admin: true,
    summary: 'Cancel a running or waiting execution',
    description: 'Session with `org:admin`, or a deploy key. A `running` or `waiting` execution becomes `cancelled`: its timer and wait are dropped and `endedAt` is set; an activation in progress finishes, but its outcome is discarded. Effects it already handed over (e-mail, webhooks, writes) are not undone. The body may be empty or `{ "data": {} }`.',
    params: Params('id'),
    body: Body(Type.Object({})),
    optionalBody: true,
    ok: { 200: json('The cancelled Execution.', Data(ExecutionSchema)) },
    errors: { 409: '`conflict`: the execution already ended (`completed`, `failed` or `cancelled`).' },
  }),
  route({
    id: 'journeysJournals', method: 'GET', path: '/v1/journeys/{key}/journals', tag: 'executions', auth: ['session', 'pipelineKey'],
    summary: 'Journals of a journey\'s latest executions',
    description: 'For the replay check of the project tool (`headwater replay`, `headwater push --check`): the latest `limit` executions of the journey, newest first, ' +
      'each with its trigger event, run id, journal and pending wait, so a local build can be replayed against them. Session of any role, or the org pipeline key (CI).',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    query: Type.Object({ limit: Type.Optional(WithDefault(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Executions to answer, 1 to 1000 (default 100).' }))) }),
    ok: { 200: json('The journey\'s journals.', Data(JourneyJournalsSchema)) },
  }),
];
