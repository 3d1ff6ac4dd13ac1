// One processing node: the ingestion engine, the journey triggers it tells of landed events, the
// journey runner and the outbox senders (webhooks, e-mail). `headwater serve` (api/service.ts) and
// `headwater worker` (cli/worker.ts) both start it; each opens the stores and streams itself and
// passes them in. The pipeline learns nothing of journeys: the node hands it `onLanded`.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../lib/log.js';
import { emailSettings, journeySettings, webhookSettings, type Config } from './config.js';
import type { ServiceMetrics } from './metrics.js';
import type { PgConnection } from '../pipeline/store/postgres.js';
import type { EventStream, IngestStream } from '../pipeline/stream/mod.js';
import type { DropCounter } from '../pipeline/drops.js';
import { wakeAndTell, type Wakes } from '../pipeline/wakes.js';
import type { IngestCall, CallResult, EventRecord } from '../pipeline/types.js';
import { startEngine, type Engine, type EngineOptions } from '../pipeline/engine.js';
import { recoverLanding } from '../pipeline/landing.js';
import { yieldToIngestion, type FrontDoorBacklog } from '../pipeline/landing-yield.js';
import { startWebhookSender, type WebhookSender } from '../journeys/webhooks/mod.js';
import { enqueueEmail, startEmailSender, type EmailSender } from '../journeys/email/mod.js';
import { onEventsLanded, startJourneyRunner, TriggerIndex, type Runner } from '../journeys/executions/mod.js';

// The Piscina task modules (workers/ depends on pipeline/ and journeys/, not back).
const INGEST_TASK = new URL('../workers/ingest-entry.cjs', import.meta.url).href;
// Runs journey code and e-mail templates in QuickJS.
const JOURNEY_TASK = new URL('../workers/journey-entry.cjs', import.meta.url).href;
const PROPS_TASK = new URL('../workers/props-entry.cjs', import.meta.url).href;

export interface NodeOptions {
  config: Config;
  log: Logger;
  pool: pg.Pool;
  connection: PgConnection;
  /** Absent: this node lands no events (a worker without a ClickHouse server). */
  ch?: ClickHouseClient;
  streams: { ingest: IngestStream; events: EventStream };
  /** Where the journey runner's writes go (the suppression-checked ingest stream). */
  submit: (calls: IngestCall[]) => Promise<CallResult[]>;
  drops: DropCounter;
  metrics: ServiceMetrics;
  /** Reads the stored webhook secrets (the instance master key). */
  decrypt: (stored: string) => string;
  /** This process is the database's only user (embedded): leases a previous run left are void. */
  sole?: boolean;
  /** How the background loops learn of work made in other processes, and tell them of this one's (pipeline/wakes.ts). */
  wakes: Wakes;
  /**
   * The HTTP front door's backlog, where ingestion and landing share one embedded store: the event
   * writer then waits while a queue stands there (pipeline/landing-yield.ts).
   */
  frontDoor?: FrontDoorBacklog;
  /** The engine settings only `serve` sets (embedded: inline batches, answers before landing). */
  engine?: Pick<EngineOptions, 'inline' | 'answerBeforeLanding'>;
}

export interface ProcessingNode {
  engine: Engine;
  runner: Runner;
  webhookSender: WebhookSender;
  emailSender: EmailSender;
  /** What landed events do on the journey side (also called by the reconcile route). */
  onLanded: (events: EventRecord[]) => Promise<void>;
  close(): Promise<void>;
}

/**
 * How long the event writer waits to fill a ClickHouse insert when not configured. With NATS, 1 s:
 * at 5,000 events/s on 2 cores, 1 s instead of 250 ms gave 11-14 % less server CPU per event and
 * 13-15 % more calls/s (fewer parts for ClickHouse to merge: its merge threads went from 5-9 % of a
 * core to 3-4 %), three alternating runs each (docs/architecture.md). Embedded, the PGlite thread
 * bounds ingestion and the wait made no difference, so the shorter one keeps triggers prompt.
 */
const defaultEventLinger = (config: Config) => (config.natsUrl ? 1_000 : 250);

export async function startNode(o: NodeOptions): Promise<ProcessingNode> {
  const { config, log, pool } = o;
  // Journeys: landed events start executions and answer waits; the runner activates them.
  const triggers = new TriggerIndex(pool);
  let runner: Runner | undefined;
  const onLanded = (events: EventRecord[]) => onEventsLanded({ pool, index: triggers, log, notify: wakeAndTell(o.wakes, 'journeys', () => runner?.notify()) }, events);
  const frontDoor = o.frontDoor;
  const closers: Array<() => Promise<void> | void> = [() => triggers.close()];
  const close = async () => { for (const c of closers.reverse()) await Promise.resolve(c()).catch((err) => log.warn('close failed', { err })); };
  try {
    // Embedded, what a previous run answered and did not land is landed first.
    if (o.engine?.answerBeforeLanding && o.ch) await recoverLanding({ pool, ch: o.ch, log, onLanded, drops: o.drops });
    const engine = startEngine({
      ingest: o.streams.ingest, events: o.streams.events, connection: o.connection, pool,
      threads: config.workers, workerModule: INGEST_TASK, ch: o.ch, log, wakes: o.wakes,
      eventLingerMs: config.eventLingerMs ?? defaultEventLinger(config), ...o.engine,
      onLanded, drops: o.drops, observe: o.metrics.engine,
      yieldLanding: frontDoor ? (since) => yieldToIngestion({ backlog: frontDoor }, since) : undefined,
    });
    closers.push(() => engine.close());
    // Outbound webhook deliveries: the secrets are read with the shared master key (set
    // HEADWATER_SECRET_KEY on every process; a worker that cannot read a secret leaves it to others).
    const webhookSender = startWebhookSender({ ...webhookSettings(config), pool, log, decrypt: o.decrypt, wakes: o.wakes });
    closers.push(() => webhookSender.close());
    const emailSender = startEmailSender({ ...emailSettings(config), pool, log, wakes: o.wakes });
    closers.push(() => emailSender.close());
    const emailQueued = wakeAndTell(o.wakes, 'email', () => emailSender.notify());
    const journeyRunner = startJourneyRunner({
      ...journeySettings(config), pool, log, taskModule: JOURNEY_TASK, propsTaskModule: PROPS_TASK, sole: o.sole, wakes: o.wakes,
      submit: o.submit, webhookNotify: wakeAndTell(o.wakes, 'webhooks', () => webhookSender.notify()),
      sendEmail: async (m) => {
        const r = await enqueueEmail(pool, m, { transport: emailSender.transport });
        emailQueued();
        return r;
      },
    });
    runner = journeyRunner;
    closers.push(() => journeyRunner.close());
    return { engine, runner: journeyRunner, webhookSender, emailSender, onLanded, close };
  } catch (err) {
    await close();
    throw err;
  }
}
