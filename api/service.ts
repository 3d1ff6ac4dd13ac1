// Wires one headwater process: stores, migrations, auth, HTTP routes. Everything long-lived is
// created here, passed down, and closed by `close()`.
import { mkdirSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { loadValidators, loadOpenApi, routes as routeDefs } from '../schemas/mod.js';
import { openPostgres } from '../pipeline/store/postgres.js';
import { openWakes, wakeAndTell } from '../pipeline/wakes.js';
import { openClickhouse } from '../pipeline/store/clickhouse.js';
import { migrate } from '../pipeline/store/migrations.js';
import type { Config } from './config.js';
import type { Logger } from '../lib/log.js';
import { Closers, slowCloseSeconds } from '../lib/closers.js';
import { loadSecrets } from '../pipeline/secrets.js';
import { createAuth } from './auth/auth.js';
import { openFrontEnd } from '../http/select.js';
import { createHttpServer, type Validate } from '../http/server.js';
import { loadStaticSite } from '../http/static.js';
import { TrustedProxies } from '../http/proxies.js';
import { HttpError } from '../http/errors.js';
import { OverQuotaError } from '../pipeline/quotas.js';
import { createBinder, type Deps } from './routes/deps.js';
import { healthRoutes } from './routes/health.js';
import { orgRoutes, userRoutes } from './routes/orgs.js';
import { credentialRoutes } from './routes/credentials.js';
import { appRoutes } from './routes/apps.js';
import { sourceRoutes } from './routes/sources.js';
import { profileRoutes } from './routes/profiles.js';
import { catalogRoutes } from './routes/catalog.js';
import { settingsRoutes } from './routes/settings.js';
import { segmentRoutes } from './routes/segments.js';
import { webhookRoutes } from './routes/webhooks.js';
import { emailRoutes } from './routes/emails.js';
import { clearOutbox, startSweeper, type JobDeps } from '../pipeline/segments/mod.js';
import { ingestRoutes } from '../ingest/routes.js';
import { receiverRoutes } from '../ingest/receiver.js';
import { segmentRoutes as segmentIngestRoutes, WriteKeys } from '../ingest/segment/mod.js';
import { writeKeyRoutes } from './routes/write-keys.js';
import { SourceDirectory } from '../ingest/directory.js';
import { Activity } from '../ingest/activity.js';
import { Limits } from '../ingest/limits.js';
import { startEraser, startRetentionSweep, Suppressions } from '../pipeline/privacy/mod.js';
import { privacyRoutes } from './routes/privacy.js';
import { createInProcessStreams, createJetStreams, StreamUnavailableError } from '../pipeline/stream/mod.js';
import { DropCounter } from '../pipeline/drops.js';
import { OutcomeCounter } from '../pipeline/stats/outcomes.js';
import { classifyStoreError } from '../pipeline/store/errors.js';
import { reconcileRoutes } from './routes/reconcile.js';
import { IngestGate } from '../ingest/gate.js';
import { ServiceMetrics } from './metrics.js';
import { startMetricsServer } from './metrics-server.js';
import { startCompiler, sweepUploads } from '../journeys/definitions/mod.js';
import { startPeriodic } from '../pipeline/periodic.js';
import { artifactRoutes } from './routes/artifacts.js';
import { pushRoutes } from './routes/pushes.js';
import { journeyRoutes } from './routes/journeys.js';
import { statsRoutes } from './routes/stats.js';
import { executionRoutes, journalRoutes } from './routes/executions.js';
import { startNode } from './node.js';

// The Piscina task module that compiles pushed bundles (its own pool: compiles never take an
// ingestion thread). The other task modules are started by the processing node (api/node.ts).
const COMPILE_TASK = new URL('../workers/compile-entry.cjs', import.meta.url).href;

// The dashboard's build output (dist/ui, written by Vite in `npm run build`): static assets beside
// the compiled server, not a module this folder imports.
const DASHBOARD_DIR = join(fileURLToPath(new URL('..', import.meta.url)), 'ui');

export interface Service {
  port: number;
  url: string;
  /** Set when this start generated the operator token (print it once). */
  generatedOperatorToken?: string;
  close(): Promise<void>;
  /** During close(): the part closing now, then those after it (logged when a stop overruns). */
  notClosed(): string[];
}

/**
 * Store outages become 503 dependency_unavailable, values a store cannot hold 422 validation_failed,
 * unique violations 409 conflict (pipeline/store/errors.ts decides which is which).
 */
export function mapError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof OverQuotaError) return new HttpError('over_quota', err.message);
  if (err instanceof StreamUnavailableError) return new HttpError('dependency_unavailable', 'the ingestion stream is unavailable; nothing was accepted');
  const kind = classifyStoreError(err);
  if (kind === 'outage') return new HttpError('dependency_unavailable', 'a store is unavailable');
  if (kind === 'unique') return new HttpError('conflict', 'already exists');
  if (kind === 'bad_data') return new HttpError('validation_failed', `a value cannot be stored: ${(err as Error).message}`);
  return undefined;
}

export async function startService(config: Config, log: Logger): Promise<Service> {
  const closers = new Closers(log, slowCloseSeconds(config.shutdownSeconds));
  const onClose = (part: string, close: () => Promise<void> | void) => closers.add(part, close);
  const closeAll = () => closers.closeAll();
  try {
    // First: a refused front end (`--front-end uws` without a loadable build) fails before any store opens.
    const frontEnd = await openFrontEnd(config.frontEnd, log);
    // A taken port fails in a second, before stores open and migrations run (the exclusive listen
    // below still catches a port taken meanwhile).
    if (config.port !== 0) await assertPortFree(config.host, config.port);
    const secrets = loadSecrets({ dataDir: config.dataDir, operatorToken: config.operatorToken, secretKey: config.secretKey });
    const pgStore = await openPostgres({ url: config.databaseUrl, dataDir: config.dataDir, log, cacheMb: config.embeddedCacheMb, idleTxMs: config.embeddedIdleTxMs });
    onClose('postgres', () => pgStore.close());
    const chStore = await openClickhouse({ url: config.clickhouseUrl, dataDir: config.dataDir });
    onClose('clickhouse', () => chStore.close());
    await migrate(pgStore.pool, chStore.client, log);
    // Background loops rest until work wakes them: made here, or told by other processes (LISTEN).
    const wakes = await openWakes({ embedded: pgStore.embedded, connectionString: config.databaseUrl, pool: pgStore.pool, log });
    onClose('wakes', () => wakes.close());
    // Closed after everything that adds to it (closers run in reverse).
    const drops = new DropCounter(pgStore.pool, log);
    onClose('drop counter', () => drops.close());
    const metrics = new ServiceMetrics();

    let nc: NatsConnection | undefined;
    if (config.natsUrl) {
      nc = await connect({ servers: config.natsUrl, maxReconnectAttempts: -1, name: 'headwater' });
      const conn = nc;
      // drain() refuses a disconnected connection; close() still releases its reconnect timers.
      onClose('nats', () => conn.drain().catch(() => conn.close()));
    }

    const auth = createAuth({
      pool: pgStore.pool, secrets, sessionTtlSeconds: config.sessionTtlSeconds, failureLimit: config.authFailureLimit,
      external: config.jwtIssuer && config.jwksUrl
        ? { issuer: config.jwtIssuer, jwksUrl: config.jwksUrl, orgClaim: config.jwtOrgClaim, roleClaim: config.jwtRoleClaim, audience: config.jwtAudience }
        : undefined,
    });
    const proxies = new TrustedProxies(config.trustedProxies);
    const publicUrl = config.publicUrl ? new URL(config.publicUrl) : undefined;
    onClose('auth', () => auth.close());

    const checks: Deps['checks'] = {
      postgres: async () => (await pgStore.pool.query('SELECT 1 AS ok')).rows[0]?.ok === 1,
      clickhouse: async () => (await chStore.client.ping()).success,
    };
    if (nc) { const conn = nc; checks.nats = async () => { if (conn.isClosed()) return false; await conn.rtt(); return true; }; }

    // The stream: JetStream when NATS_URL is set, else in-process. This process always runs an
    // engine (workers); `headwater worker` processes add more against the same NATS / Postgres.
    const streams = nc ? await createJetStreams({ nc, log, names: { prefix: config.streamPrefix }, drops }) : createInProcessStreams({ log, drops });
    onClose('streams', async () => { await streams.ingest.close(); await streams.events.close(); });
    // Every write path (HTTP routes, receiver, Segment routes, journeys) submits through this: calls
    // carrying a suppressed identifier are refused before they reach the stream.
    // Changes of a suppression list made here reload it at once; other processes tell of theirs.
    const suppressions = new Suppressions(pgStore.pool, wakes);
    onClose('suppressions', () => suppressions.close());
    const ingestStream = suppressions.wrap(streams.ingest);
    // Embedded: answered events are recoverable from Postgres, so answers need not wait for
    // ClickHouse; what a previous run answered and did not land is landed first.
    const answerBeforeLanding = !nc && pgStore.embedded;
    // HTTP writes pass the gate (503 + Retry-After while the workers are behind); the journey
    // runner and promote replays submit directly: their work was accepted already.
    // Held and refused track calls are counted per org and minute for the events chart.
    const outcomes = new OutcomeCounter(pgStore.pool, log);
    onClose('outcome counter', () => outcomes.close());
    const gate = new IngestGate(streams.ingest, {
      maxWaitMs: config.ingestMaxWaitMs,
      observe: (calls, results) => { metrics.observeCalls(calls, results); outcomes.observe(calls, results); },
    });
    // The engine, the journey triggers it tells of landed events, the runner and the senders.
    // Embedded, the event writer yields to the gate's backlog (landing shares the store's one
    // thread with ingestion).
    const node = await startNode({
      config, log, pool: pgStore.pool, connection: pgStore.connection, ch: chStore.client, streams,
      submit: (calls) => ingestStream.submit(calls), drops, metrics, decrypt: (x) => secrets.decrypt(x), sole: pgStore.embedded, wakes,
      engine: { inline: pgStore.embedded ? pgStore.pool : undefined, answerBeforeLanding },
      frontDoor: pgStore.embedded ? () => gate.backlog() : undefined,
    });
    onClose('processing node', () => node.close());
    const { engine, webhookSender, emailSender, onLanded } = node;
    const directory = new SourceDirectory(pgStore.pool);
    onClose('source directory', () => directory.close());
    const activity = new Activity(pgStore.pool, log);
    onClose('activity', () => activity.close());
    const limits = new Limits(pgStore.pool, log);
    onClose('limits', () => limits.close());
    const writeKeys = new WriteKeys(pgStore.pool);
    onClose('write keys', () => writeKeys.close());

    // Segment backfills, sweeps and previews run in this process; their system events go to the
    // event stream like those of ingestion.
    const jobs: JobDeps = {
      pool: pgStore.pool, log,
      publish: async (events) => { await streams.events.publish(events); await clearOutbox(pgStore.pool, events.map((e) => e.id), log); },
    };
    const sweeper = startSweeper(jobs, Math.max(config.segmentSweepMs, 100));
    onClose('segment sweeper', () => sweeper.close());

    // Versions of pushes compile here; embedded, this process is the database's only user.
    const compiler = startCompiler({ pool: pgStore.pool, log, taskModule: COMPILE_TASK, threads: config.compileThreads, sole: pgStore.embedded, wakes });
    onClose('compiler', () => compiler.close());
    const eraser = startEraser({
      pool: pgStore.pool, ch: chStore.client, log, leaseMs: config.erasureLeaseMs, pauseMs: config.erasurePauseMs, pollMs: 1000, sole: pgStore.embedded, wakes,
    });
    onClose('eraser', () => eraser.close());
    const retention = startRetentionSweep({ pool: pgStore.pool, ch: chStore.client, log, everyMs: Math.max(config.retentionSweepMs, 100) });
    onClose('retention sweep', () => retention.close());
    // Staged uploads of a process that died mid-upload.
    await sweepUploads(pgStore.pool).catch((err) => log.warn('artifact upload sweep failed', { err: String(err) }));
    const uploadSweep = startPeriodic(10 * 60_000, () => sweepUploads(pgStore.pool), log, 'artifact upload sweep failed');
    onClose('upload sweep', () => uploadSweep.close());

    const deps: Deps = {
      pool: pgStore.pool, ch: chStore.client, auth, secrets, config, log, checks, recent: activity,
      frontEnd: frontEnd.name,
      ingest: { replay: (calls) => ingestStream.submit(calls) },
    };
    // Streamed request bodies (artifact uploads) spill here past 1 MiB held in memory.
    const spillDir = join(config.dataDir, 'tmp');
    mkdirSync(spillDir, { recursive: true, mode: 0o700 });
    const server = createHttpServer({
      frontEnd, log, bodyLimit: config.bodyLimit, maxDepth: 64, mapError, spillDir,
      authenticate: (a, r, address) => auth.authenticate(a, r, address), proxies,
      site: loadStaticSite(DASHBOARD_DIR),
      observe: metrics.observeHttp,
    });
    const validators = loadValidators() as Record<string, Validate>;
    const bind = createBinder(server, routeDefs, validators);
    healthRoutes(bind, deps, JSON.stringify(loadOpenApi()));
    orgRoutes(bind, deps);
    credentialRoutes(bind, deps);
    reconcileRoutes(bind, deps, onLanded);
    userRoutes(bind);
    appRoutes(bind, deps);
    sourceRoutes(bind, deps);
    profileRoutes(bind, deps);
    catalogRoutes(bind, deps);
    settingsRoutes(bind, deps);
    segmentRoutes(bind, deps, jobs, config.segmentPreviewCap);
    const admitted = suppressions.wrap(gate);
    metrics.attach({
      pool: pgStore.pool, backlog: () => gate.backlog(), ingestLag: () => streams.ingest.lag(), eventLag: () => streams.events.lag(),
      workers: () => engine.stats(), unlanded: () => engine.unlanded(), drops: drops.totals, listening: () => wakes.listening,
    });
    bind('GET', '/metrics', async () => ({ raw: await metrics.text(), contentType: metrics.contentType }));
    if (config.metricsPort !== undefined) {
      const ms = await startMetricsServer({ host: config.host, port: config.metricsPort, log, text: () => metrics.text(), contentType: metrics.contentType });
      onClose('metrics server', () => ms.close());
    }
    ingestRoutes(bind, { directory, stream: admitted, activity, validators, limits });
    receiverRoutes(bind, { pool: pgStore.pool, secrets, stream: admitted, activity });
    // What a route enqueues wakes this process's loop and is told to the others.
    webhookRoutes(bind, deps, { notify: wakeAndTell(wakes, 'webhooks', () => webhookSender.notify()) });
    emailRoutes(bind, deps, { transport: emailSender.transport, notify: wakeAndTell(wakes, 'email', () => emailSender.notify()) });
    artifactRoutes(bind, deps);
    pushRoutes(bind, deps, { kick: wakeAndTell(wakes, 'compile', () => compiler.kick()) });
    journeyRoutes(bind, deps);
    statsRoutes(bind, deps);
    executionRoutes(bind, deps);
    journalRoutes(bind, deps);
    privacyRoutes(bind, deps, {
      eraser: { notify: wakeAndTell(wakes, 'erase', () => eraser.notify()) },
      suppressions: { invalidate: async (orgId) => { await suppressions.invalidate(orgId); wakes.tell('suppressions'); } },
    });
    writeKeyRoutes(bind, deps, writeKeys);
    segmentIngestRoutes(bind, {
      keys: writeKeys, stream: admitted, activity, limits, validators, pool: pgStore.pool, log,
      corsOrigins: config.segmentCorsOrigins, mapError,
      origin: (req) => proxies.origin(req.remoteAddress ?? '', {
        host: req.headers.host, forwardedHost: req.headers['x-forwarded-host'], forwardedProto: req.headers['x-forwarded-proto'],
      }, publicUrl, `127.0.0.1:${config.port}`),
    });

    const port = await server.listen(config.host, config.port).catch(async (err: { code?: string }) => {
      if (err?.code !== 'EADDRINUSE') throw err;
      throw Object.assign(new Error(await portInUse(config.host, config.port)), { exitCode: 3 });
    });
    onClose('http server', () => server.close());
    const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
    log.info('listening', { url: `http://${host}:${port}`, frontEnd: server.frontEnd, postgres: pgStore.embedded ? 'embedded' : 'server', clickhouse: chStore.embedded ? 'embedded' : 'server', nats: nc ? 'server' : 'in-process' });
    return { port, url: `http://${host}:${port}`, generatedOperatorToken: secrets.generatedOperatorToken, close: closeAll, notClosed: () => closers.notClosed() };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** Listens once on host:port without port sharing and closes: a taken port is a start-up failure. */
async function assertPortFree(host: string, port: number): Promise<void> {
  const taken = await new Promise<boolean>((resolve) => {
    const probe = createNetServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
  if (taken) throw Object.assign(new Error(await portInUse(host, port)), { exitCode: 3 });
}

/** One line for a port that is taken, saying whether a headwater answers on it. */
async function portInUse(host: string, port: number): Promise<string> {
  const probe = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  let headwater = false;
  // The answer races a ref'd timer of our own: with AbortSignal.timeout alone (an unref'd timer), a
  // program that drops the connection left fetch's rejection to arrive after nothing kept the
  // process alive, and serve ended with exit code 0 and no line at all (seen once in CI).
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('no answer')), 1000); });
  try {
    const r = await Promise.race([fetch(`${probe}/health/ready`, { signal: ac.signal }), late]);
    const b = (await Promise.race([r.json(), late])) as { data?: { frontEnd?: unknown } };
    headwater = typeof b?.data?.frontEnd === 'string';
  } catch { /* not answering, or not HTTP: another program */ } finally { clearTimeout(timer); ac.abort(); }
  const who = headwater ? `another headwater already serves ${probe}` : 'another program listens on it';
  return `port ${port} on ${host} is in use (${who}); stop it, or choose another port with PORT or --port`;
}
