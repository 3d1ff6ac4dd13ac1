// Every route of the contract (the OpenAPI document's paths), one file per tag under routes/ as
// api/routes/ is split. The validators and the OpenAPI document are generated from this list by
// build.ts, in this order: the document's paths, tags and component names follow it, so the order
// is kept (a tag that appears in several places of the document is split in its file).
import { healthRoutes } from './routes/health.js';
import { metricsRoutes, orgAdminRoutes, orgRoutes } from './routes/operator.js';
import { ingestionRoutes } from './routes/ingestion.js';
import { catalogRoutes } from './routes/catalog.js';
import { appRoutes } from './routes/apps.js';
import { sourceRoutes } from './routes/sources.js';
import { segmentRoutes } from './routes/segments.js';
import { executionRoutes } from './routes/executions.js';
import { artifactRoutes } from './routes/artifacts.js';
import { pushRoutes } from './routes/pushes.js';
import { webhookRoutes } from './routes/webhooks.js';
import { sessionRoutes, usersMeRoutes } from './routes/users.js';
import { settingsRoutes } from './routes/settings.js';
import { eventRoutes } from './routes/events.js';
import { journeyRoutes } from './routes/journeys.js';
import { emailRoutes } from './routes/emails.js';
import { segmentRoutes as segmentApiRoutes } from './routes/segment.js';
import { privacyRoutes } from './routes/privacy.js';
import { statsRoutes } from './routes/stats.js';

export const routes = [
  ...healthRoutes,
  ...metricsRoutes,
  ...ingestionRoutes,
  ...catalogRoutes,
  ...appRoutes,
  ...sourceRoutes,
  ...segmentRoutes,
  ...executionRoutes,
  ...artifactRoutes,
  ...pushRoutes,
  ...webhookRoutes,
  ...orgRoutes,
  ...sessionRoutes,
  ...orgAdminRoutes,
  ...settingsRoutes,
  ...usersMeRoutes,
  ...eventRoutes,
  ...journeyRoutes,
  ...emailRoutes,
  ...segmentApiRoutes,
  ...privacyRoutes,
  ...statsRoutes,
];

/** Any route of the contract, with its own method, path and request schema types. */
export type ContractRoute = (typeof routes)[number];
