// `headwater worker`: a process of workers alone (no HTTP), so front ends and workers scale apart
// against one NATS / Postgres / ClickHouse. It needs the shared servers: embedded stores belong to
// the serve process. Without CLICKHOUSE_URL it leaves landing events to the serve process (chDB).
import { connect } from '@nats-io/transport-node';
import type { Config } from '../api/config.js';
import { ConfigError } from '../api/config.js';
import type { Logger } from '../lib/log.js';
import { Closers, slowCloseSeconds } from '../lib/closers.js';
import { openPostgres } from '../pipeline/store/postgres.js';
import { openClickhouse } from '../pipeline/store/clickhouse.js';
import { migrate } from '../pipeline/store/migrations.js';
import { createJetStreams } from '../pipeline/stream/mod.js';
import { DropCounter } from '../pipeline/drops.js';
import { ServiceMetrics } from '../api/metrics.js';
import { startMetricsServer } from '../api/metrics-server.js';
import { loadSecrets } from '../pipeline/secrets.js';
import { Suppressions } from '../pipeline/privacy/mod.js';
import { startNode } from '../api/node.js';
import { openWakes } from '../pipeline/wakes.js';

export async function runWorker(config: Config, log: Logger): Promise<{ close(): Promise<void>; notClosed(): string[] }> {
  if (!config.databaseUrl || !config.natsUrl) throw new ConfigError('headwater worker needs DATABASE_URL and NATS_URL (embedded stores belong to the serve process)');
  const pgStore = await openPostgres({ url: config.databaseUrl, dataDir: config.dataDir, log });
  const chStore = config.clickhouseUrl ? await openClickhouse({ url: config.clickhouseUrl, dataDir: config.dataDir }) : undefined;
  if (chStore) await migrate(pgStore.pool, chStore.client, log);
  const nc = await connect({ servers: config.natsUrl, maxReconnectAttempts: -1, name: 'headwater-worker' });
  // Background loops rest until work wakes them: made here, or told by other processes (LISTEN).
  const wakes = await openWakes({ embedded: false, connectionString: config.databaseUrl, pool: pgStore.pool, log });
  const drops = new DropCounter(pgStore.pool, log);
  const metrics = new ServiceMetrics();
  const streams = await createJetStreams({ nc, log, names: { prefix: config.streamPrefix }, drops });
  // A worker serves no operator routes: it neither generates nor accepts an operator token.
  const secrets = loadSecrets({ dataDir: config.dataDir, operatorToken: null, secretKey: config.secretKey });
  // Journey writes are refused for suppressed identifiers here too.
  const suppressions = new Suppressions(pgStore.pool, wakes);
  const ingestStream = suppressions.wrap(streams.ingest);
  // With a ClickHouse server this process lands events too, and so starts journeys and answers waits.
  const node = await startNode({
    config, log, pool: pgStore.pool, connection: pgStore.connection, ch: chStore?.client, streams,
    submit: (calls) => ingestStream.submit(calls), drops, metrics, decrypt: (x) => secrets.decrypt(x), wakes,
  });
  const { engine } = node;
  metrics.attach({ pool: pgStore.pool, ingestLag: () => streams.ingest.lag(), eventLag: () => streams.events.lag(), workers: () => engine.stats(), unlanded: () => engine.unlanded(), drops: drops.totals, listening: () => wakes.listening });
  // A worker has no HTTP front end: its metrics are served only on the metrics port.
  const metricsServer = config.metricsPort !== undefined
    ? await startMetricsServer({ host: config.host, port: config.metricsPort, log, text: () => metrics.text(), contentType: metrics.contentType })
    : undefined;
  log.info('worker started', { threads: config.workers, writesEvents: !!chStore });
  // Closed in reverse order: the metrics server first, the Postgres pool last.
  const closers = new Closers(log, slowCloseSeconds(config.shutdownSeconds));
  closers.add('postgres', () => pgStore.close());
  closers.add('drop counter', () => drops.close());
  closers.add('clickhouse', () => chStore?.close());
  closers.add('wakes', () => wakes.close());
  closers.add('nats', () => nc.drain().catch(() => nc.close()));
  closers.add('streams', async () => { await streams.ingest.close(); await streams.events.close(); });
  closers.add('suppressions', () => suppressions.close());
  closers.add('processing node', () => node.close());
  closers.add('metrics server', () => metricsServer?.close());
  return { close: () => closers.closeAll(), notClosed: () => closers.notClosed() };
}
