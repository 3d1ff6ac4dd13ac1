// Routes of the `settings` tag of the contract, built with ./define.ts; ../routes.ts assembles them
// in document order.
import { Type } from '@sinclair/typebox';
import { Body, Data } from '../common.js';
import { IngestionPolicy } from '../resources.js';
import { MessagingSchema, SettingsSchema, RetentionSchema } from '../org-resources.js';
import { json, route } from './define.js';

export const settingsRoutes = [
  route({
    id: 'settingsGet', method: 'GET', path: '/v1/settings', tag: 'settings', auth: ['session'],
    summary: 'Org settings',
    ok: { 200: json('The settings.', Data(SettingsSchema)) },
  }),
  route({
    id: 'settingsUpdate', method: 'PATCH', path: '/v1/settings', tag: 'settings', auth: ['session'], admin: true,
    summary: 'Change settings (partial)',
    description: 'Only the members given change, and within `retention` only the kinds given (null: keep forever); within `messaging` only the rules given (null: no rule).',
    body: Body(Type.Object({
      ingestionPolicy: Type.Optional(IngestionPolicy),
      retention: Type.Optional(Type.Partial(RetentionSchema, { additionalProperties: false })),
      messaging: Type.Optional(Type.Partial(MessagingSchema, { additionalProperties: false })),
    })),
    ok: { 200: json('The settings.', Data(SettingsSchema)) },
  }),
];
