// `headwater worker`: a process of workers alone (no HTTP), so front ends and workers scale apart
// against one NATS / Postgres / ClickHouse. It needs the shared servers: embedded stores belong to
// the serve process. Without CLICKHOUSE_URL it leaves landing events to the serve process (chDB).
import { connect } from '@nats-io/transport-node';
import type { Config } from '../api/config.js';
import { ConfigError, emailSettings, journeySettings, webhookSettings } from '../api/config.js';
import type { Logger } from '../lib/log.js';
import { openPostgres } from '../pipeline/store/postgres.js';
import { openClickhouse } from '../pipeline/store/clickhouse.js';
import { migrate } from '../pipeline/store/migrations.js';
import { createJetStreams } from '../pipeline/stream/mod.js';
import { startEngine } from '../pipeline/engine.js';
import { DropCounter } from '../pipeline/drops.js';
import { ServiceMetrics } from '../api/metrics.js';
import { startMetricsServer } from '../api/metrics-server.js';
import { startWebhookSender } from '../journeys/webhooks/mod.js';
import { enqueueEmail, startEmailSender } from '../journeys/email/mod.js';
import { loadSecrets } from '../pipeline/secrets.js';
import { Suppressions } from '../pipeline/privacy/mod.js';
import { onEventsLanded, startJourneyRunner, TriggerIndex, type Runner } from '../journeys/executions/mod.js';

// The Piscina task module that processes ingestion batches (workers/ depends on pipeline/, not back).
const INGEST_TASK = new URL('../workers/ingest-task.js', import.meta.url).href;
const JOURNEY_TASK = new URL('../workers/journey-task.js', import.meta.url).href;
const PROPS_TASK = new URL('../workers/props-task.js', import.meta.url).href;

export async function runWorker(config: Config, log: Logger): Promise<{ close(): Promise<void> }> {
  if (!config.databaseUrl || !config.natsUrl) throw new ConfigError('headwater worker needs DATABASE_URL and NATS_URL (embedded stores belong to the serve process)');
  const pgStore = await openPostgres({ url: config.databaseUrl, dataDir: config.dataDir, log });
  const chStore = config.clickhouseUrl ? await openClickhouse({ url: config.clickhouseUrl, dataDir: config.dataDir }) : undefined;
  if (chStore) await migrate(pgStore.pool, chStore.client, log);
  const nc = await connect({ servers: config.natsUrl, maxReconnectAttempts: -1, name: 'headwater-worker' });
  const drops = new DropCounter(pgStore.pool, log);
  const metrics = new ServiceMetrics();
  const streams = await createJetStreams({ nc, log, names: { prefix: config.streamPrefix }, drops });
  // With a ClickHouse server this process lands events too, and so starts journeys and answers waits.
  const triggers = new TriggerIndex(pgStore.pool);
  let runner: Runner | undefined;
  const engine = startEngine({
    ingest: streams.ingest, events: streams.events, connection: pgStore.connection, pool: pgStore.pool,
    threads: config.workers, workerModule: INGEST_TASK, ch: chStore?.client, log, drops, observe: metrics.engine,
    onLanded: (events) => onEventsLanded({ pool: pgStore.pool, index: triggers, log, notify: () => runner?.notify() }, events),
  });
  // Outbound webhook deliveries: the secrets are read with the shared master key (set
  // HEADWATER_SECRET_KEY on every process; a worker that cannot read a secret leaves it to others).
  // A worker serves no operator routes: it neither generates nor accepts an operator token.
  const secrets = loadSecrets({ dataDir: config.dataDir, operatorToken: null, secretKey: config.secretKey });
  const sender = startWebhookSender({ ...webhookSettings(config), pool: pgStore.pool, log, decrypt: (x) => secrets.decrypt(x) });
  const emailSender = startEmailSender({ ...emailSettings(config), pool: pgStore.pool, log });
  // Journey writes are refused for suppressed identifiers here too.
  const suppressions = new Suppressions(pgStore.pool);
  const ingestStream = suppressions.wrap(streams.ingest);
  runner = startJourneyRunner({
    ...journeySettings(config), pool: pgStore.pool, log, taskModule: JOURNEY_TASK, propsTaskModule: PROPS_TASK,
    submit: (calls) => ingestStream.submit(calls), webhookNotify: () => sender.notify(),
    sendEmail: async (m) => { const r = await enqueueEmail(pgStore.pool, m, { transport: emailSender.transport }); emailSender.notify(); return r; },
  });
  const journeyRunner = runner;
  metrics.attach({ pool: pgStore.pool, ingestLag: () => streams.ingest.lag(), eventLag: () => streams.events.lag(), workers: () => engine.stats(), drops: drops.totals });
  // A worker has no HTTP front end: its metrics are served only on the metrics port.
  const metricsServer = config.metricsPort !== undefined
    ? await startMetricsServer({ host: config.host, port: config.metricsPort, log, text: () => metrics.text(), contentType: metrics.contentType })
    : undefined;
  log.info('worker started', { threads: config.workers, writesEvents: !!chStore });
  return {
    async close() {
      await metricsServer?.close();
      await journeyRunner.close();
      suppressions.close();
      await sender.close();
      await emailSender.close();
      await engine.close();
      await streams.ingest.close();
      await streams.events.close();
      await nc.drain().catch(() => nc.close());
      await chStore?.close();
      triggers.close();
      await drops.close();
      await pgStore.close();
    },
  };
}
