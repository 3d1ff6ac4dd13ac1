// Routes of the `journeys` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data, List, PageQuery } from '../common.js';
import { JourneySchema } from '../journey-resources.js';
import { json, route } from './define.js';

export const journeyRoutes = [
  route({
    id: 'journeysList', method: 'GET', path: '/v1/journeys', tag: 'journeys', auth: ['session', 'deployKey'],
    summary: 'List journeys',
    description: 'In key order. A journey exists once a push filed a version of its key, and stays listed when later manifests no longer name it. `appId`, `trigger` and `purpose` come from its latest `ready` version (the one new executions take), or from its latest version while none is ready.',
    query: PageQuery,
    ok: { 200: json('A page of journeys.', List(JourneySchema)) },
  }),
  route({
    id: 'journeysGet', method: 'GET', path: '/v1/journeys/{key}', tag: 'journeys', auth: ['session', 'deployKey'],
    summary: 'Fetch a journey',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    ok: { 200: json('The Journey.', Data(JourneySchema)) },
  }),
  route({
    id: 'journeysUpdate', method: 'PATCH', path: '/v1/journeys/{key}', tag: 'journeys', auth: ['session', 'deployKey'], admin: true,
    summary: 'Enable or disable a journey',
    description: 'Session with `org:admin`, or a deploy key (which acts as org:admin on the release lifecycle). Only this route turns a journey on or off (a push never does). Enabling needs a `ready` version; disabling is always allowed. New executions take the newest ready version; running ones keep theirs.',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    body: Body(Type.Object({ enabled: Type.Boolean() })),
    ok: { 200: json('The Journey.', Data(JourneySchema)) },
    errors: { 409: '`release_not_ready`: enabling a journey that has no `ready` version.' },
  }),
];
