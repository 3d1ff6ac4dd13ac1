// Read routes of the dashboard's numbers (docs/dashboard.md): the org's track calls over time by
// outcome, its counts with failure rates, and a journey's metrics. Built with ./define.ts.
import { Type } from '@sinclair/typebox';
import { json, route } from './define.js';
import { Data, DateTime, MapOf, Nullable, StringEnum } from '../common.js';

const Count = Type.Integer({ minimum: 0 });
const Rate = Nullable(Type.Number({ minimum: 0, maximum: 1 }));

const Window = <const B extends readonly [string, ...string[]]>(bucket: B, defaults: string) => ({
  since: Type.Optional(Type.String({ format: 'date-time', description: `Start of the window (inclusive; rounded down to its bucket). Default: ${defaults} before \`until\`.` })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'End of the window (exclusive). Default: now.' })),
  bucket: Type.Optional(StringEnum(bucket, { description: `Bucket width (default \`${bucket[0]}\`); at most 1,500 buckets per answer.` })),
});

export const EventStatsSchema = Type.Object(
  {
    bucket: StringEnum(['minute', 'hour'] as const),
    since: DateTime,
    until: DateTime,
    totals: Type.Object({ accepted: Count, quarantined: Count, denied: Count, rejected: Count }),
    series: Type.Array(Type.Object({ at: DateTime, accepted: Count, quarantined: Count, denied: Count, rejected: Count }), {
      description: 'One point per bucket start (UTC), empty buckets included, oldest first: `entered` by start, `completed` and `failed` by end, `converted` by `convertedAt` (when the goal event came).',
    }),
  },
  {
    title: 'EventStats',
    description:
      'Track calls by when they were received. `accepted`: events stored (distinct event ids in the event store; `system.segment_entered` and `system.segment_exited` of segment transitions excluded, the tracks of journeys included). `quarantined`: held by the strict policy. ' +
      '`denied`: refused for a denied event or trait name (`event_denied`, `trait_denied`). `rejected`: refused for another reason (`validation_failed`, ' +
      '`over_quota`, an archived source, ...). Refusals of the HTTP layer itself (a malformed body, a bad key) are not calls and are not counted; ' +
      'held and refused calls are stored every 2 s by the process that answered them.',
  },
);

const Delivered = Type.Object({ total: Count, failed: Count, failureRate: Rate });

export const StatsSummarySchema = Type.Object(
  {
    since: DateTime,
    until: DateTime,
    profiles: Type.Integer({ minimum: 0, description: 'Live profiles (not merged into another).' }),
    segments: Count,
    journeys: Type.Object({ total: Count, enabled: Count }),
    executions: Type.Object({ running: Count, waiting: Count }, { description: 'Executions in that state now.' }),
    emails: Type.Object(Delivered.properties, { description: 'E-mails recorded in the window; `failureRate` is failed / total (null when none).' }),
    webhookDeliveries: Type.Object(Delivered.properties, { description: 'Webhook deliveries created in the window; `failureRate` is failed / total (null when none).' }),
  },
  { title: 'StatsSummary' },
);

const VariantStats = Type.Object({
  entered: Type.Integer({ minimum: 0, description: 'Executions started in the window whose `variants` hold this key for this split.' }),
  converted: Type.Integer({ minimum: 0, description: 'Of those, the converted ones.' }),
  conversionRate: Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'converted / entered (null when none entered).' })),
});
const N = (description: string) => Type.Integer({ minimum: 0, description });

export const JourneyMetricsSchema = Type.Object(
  {
    totals: Type.Object({
      entered: Type.Integer({ minimum: 0, description: 'Executions started in the window.' }),
      running: Type.Integer({ minimum: 0, description: 'Running now (whenever started).' }),
      waiting: Type.Integer({ minimum: 0, description: 'Waiting now (whenever started).' }),
      completed: Type.Integer({ minimum: 0, description: 'Ended `completed` in the window.' }),
      failed: Type.Integer({ minimum: 0, description: 'Ended `failed` in the window.' }),
      cancelled: Type.Integer({ minimum: 0, description: 'Ended `cancelled` in the window.' }),
      exited: N('Ended in the window by an exit rule (`exitReason: "event:<name>"`, status `cancelled`) or by a goal with `exit: true` (`exitReason: "goal"`, status `completed`); a cancel through the API does not count.'),
      converted: N('Executions started in the window that are `converted` (whenever the goal event came), holdout executions included.'),
      holdout: N('Executions started in the window that were held out (`holdout: true`).'),
      holdoutConverted: N('Of those, the converted ones.'),
      throttled: N('Triggers the throttle skipped, in the hours that overlap the window (counted per hour).'),
      capped: N('Marketing e-mails of this journey the frequency cap refused, in the hours that overlap the window.'),
    }),
    conversionRate: Nullable(Type.Number({ minimum: 0, maximum: 1, description: '(converted - holdoutConverted) / (entered - holdout): the treated executions\' conversion; null when none was treated.' })),
    holdoutConversionRate: Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'holdoutConverted / holdout; null without holdout executions.' })),
    lift: Nullable(Type.Number({ description: '(conversionRate - holdoutConversionRate) / holdoutConversionRate; null when either rate is null or the holdout rate is 0.' })),
    byVariant: MapOf(MapOf(VariantStats), { description: 'Split name -> variant key -> numbers.' }),
    waitingBySteps: MapOf(Count, {
      description: 'Waiting executions by where they wait: `#<journal position> <call> <argument>`, e.g. `#1 sleep 1h` or `#2 waitForEvent Purchased`. The counts add up to `totals.waiting`.',
    }),
    series: Type.Array(Type.Object({ at: DateTime, entered: Count, completed: Count, failed: Count, converted: Count }), {
      description: 'One point per bucket start (UTC), empty buckets included, oldest first: `entered` by start, `completed` and `failed` by end, `converted` by `convertedAt` (when the goal event came).',
    }),
  },
  {
    title: 'JourneyMetrics',
    description: 'A journey\'s executions in [since, until) (docs/dashboard.md). Flows count by when they happened (`entered` by start; `completed`, `failed`, `cancelled`, `exited` by end); the conversion numbers (`converted`, `holdout`, `holdoutConverted`, the rates, `byVariant`) count the cohort that started in the window, whenever it converted.',
  },
);

export const statsRoutes = [
  route({
    id: 'statsEvents', method: 'GET', path: '/v1/stats/events', tag: 'stats', auth: ['session'],
    summary: 'Track calls over time, by outcome',
    description: 'The org\'s track calls per minute or hour: accepted, quarantined, denied and rejected (see EventStats). Session of any role. `since` must be before `until`.',
    query: Type.Object(Window(['minute', 'hour'], '24 hours')),
    ok: { 200: json('The counts per bucket.', Data(EventStatsSchema)) },
  }),
  route({
    id: 'statsSummary', method: 'GET', path: '/v1/stats/summary', tag: 'stats', auth: ['session'],
    summary: 'The org\'s counts and delivery failure rates',
    description: 'Profiles, segments, journeys (enabled), running and waiting executions now; e-mails and webhook deliveries created in the window with their failure rates. Session of any role.',
    query: Type.Object({
      since: Type.Optional(Type.String({ format: 'date-time', description: 'Default: 24 hours before `until`.' })),
      until: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now.' })),
    }),
    ok: { 200: json('The counts.', Data(StatsSummarySchema)) },
  }),
  route({
    id: 'journeysMetrics', method: 'GET', path: '/v1/journeys/{key}/metrics', tag: 'journeys', auth: ['session'],
    summary: 'A journey\'s metrics over time',
    description: 'Entered, completed, failed and cancelled executions in the window (with a series per hour or day), running and waiting ones now and where they wait. Session of any role. `since` must be before `until`.',
    params: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }),
    query: Type.Object(Window(['hour', 'day'], '24 hours (`hour`) or 30 days (`day`)')),
    ok: { 200: json('The journey\'s metrics.', Data(JourneyMetricsSchema)) },
  }),
];
