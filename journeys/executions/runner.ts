// The journey runner of a process: claims due executions (new ones, answered or expired waits,
// retries) from Postgres with FOR UPDATE SKIP LOCKED and a lease, activates each on the journey
// task threads with this process as its host, and stores the outcome under the same lease. Several
// processes share the work; a process that dies leaves leases that expire, and its executions are
// activated again from their journal (effects are idempotent per journal position).
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { ACTIVATIONS_PER_THREAD, type Activation, type Limits, type RenderResult } from '../runtime/mod.js';
import type { JournalEntry } from '../../schemas/mod.js';
import { newId } from '../../pipeline/ids.js';
import { QuietCollector } from '../../pipeline/quiet-collect.js';
import { versionModule } from '../definitions/mod.js';
import type { CallResult, IngestCall } from '../../pipeline/types.js';
import { createHost, type EmailMessage, type HostExecution } from './host.js';
import type { WaitRecord } from './landed.js';
import type { PropsCheck, PropsInput } from './props.js';
import { PROPS_WARM_UP, type HostAnswer, type HostRequest, type JourneyTask } from './task.js';
import { batchSubmits } from './batcher.js';
import { claimDue } from './claim.js';
import { decideRestart, RESTART_DEFAULTS, type RestartLimits } from './restarts.js';
import { nextDebounceMs, startDebounced } from './starts.js';
import { DeferredSend } from './messaging.js';
import { createProfileReads } from './reads.js';
import { createSaver, retryDelayMs, type Outcome } from './save.js';
import { resumeJournal } from './resume.js';
import { longestRest, type Wakes } from '../../pipeline/wakes.js';

export interface RunnerOptions {
  pool: pg.Pool;
  log: Logger;
  /** URL of the Piscina task module (workers/journey-task.js), given by the process wiring. */
  taskModule: string;
  /** URL of the props-check task module (workers/props-task.js), given by the process wiring. */
  propsTaskModule: string;
  threads: number;
  submit(calls: IngestCall[]): Promise<CallResult[]>;
  sendEmail(m: EmailMessage): Promise<{ id: string }>;
  webhookNotify?(): void;
  limits?: Partial<Limits>;
  /** How long a claim holds an execution; an activation longer than this may run twice. Default wall budget + 30 s. */
  leaseMs?: number;
  /**
   * How soon due work that could not be claimed is looked at again; default 250 ms. When nothing is
   * due the runner sleeps until the earliest deadline, at most `idleMs`.
   */
  pollMs?: number;
  /**
   * The longest sleep when nothing is due (other processes' leases; their work while `wakes` do not
   * listen): default `wakes.idleMs` while they listen, else 5 s.
   */
  idleMs?: number;
  /** Executions started or answered in other processes wake it (pipeline/wakes.ts). */
  wakes: Wakes;
  /** This process is the database's only user (embedded): leases left by a previous run are void. */
  sole?: boolean;
  /** Bounds on `ctx.restart()` per execution (RESTART_DEFAULTS). */
  restarts?: Partial<RestartLimits>;
}

export interface Runner {
  /** Look for due executions now (a trigger or an answered wait in this process). */
  notify(): void;
  close(): Promise<void>;
}

interface Row {
  id: string; org_id: string; journey_key: string; version_id: string; app_id: string; source_id: string; profile_id: string;
  environment: 'development' | 'production'; run_id: string; run_seq: number; event: Record<string, unknown>; status: string;
  journal: JournalEntry[]; wait: WaitRecord | null; wake_value: unknown; lease_id: string; attempts: number;
  started_at: Date;
}

/** Debounced starts taken per tick; a full batch looks again at the next tick. */
const DEBOUNCE_BATCH = 200;
/** The shortest time between two claims while activations are in hand. */
const CLAIM_GAP_MS = 10;
/**
 * Activations in hand per QuickJS thread. Most of an activation's time is spent waiting for its host
 * calls (a trait write goes through the ingestion path and back), so an org's share of these slots,
 * not the CPU, bounded a one-org load: 16 per thread gave ~200 three-call executions/s embedded, 64
 * gave ~380 (each in hand costs its sandbox, ~0.3 MB). The thread's engine keeps as many idle
 * sandboxes per journey (runtime/cache.ts).
 */
const PER_THREAD = ACTIVATIONS_PER_THREAD;
/**
 * The share of a runner's activation slots one org may hold: half, so the other half is always
 * free for the rest when one org's work (a restart loop, a burst of triggers) would fill it.
 */
const ORG_SHARE = 0.5;

/** Milliseconds to the earliest due execution nobody holds (null: none). */
const NEXT_DUE = `SELECT (EXTRACT(EPOCH FROM (SELECT min(d.wake_at) FROM orgs o CROSS JOIN LATERAL (
   SELECT e.wake_at FROM executions e WHERE e.org_id = o.id AND e.status IN ('running', 'waiting')
     AND (e.lease_until IS NULL OR e.lease_until < now()) ORDER BY e.wake_at LIMIT 1) d) - now()) * 1000)::float8 AS ms`;

/** The thread an execution's activations run on: FNV-1a of its id. */
export function stickyIndex(id: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) % n;
}

/**
 * One journey thread: a single-thread pool, and what returns a burst's memory once it has run
 * nothing for 5 s (pipeline/quiet-collect.ts).
 */
interface JourneyThread { pool: Piscina; quiet: QuietCollector }

/** The runner's threads: the journey threads, and the props-check pool. */
interface Threads { pools: JourneyThread[]; props: Piscina }

const destroyThreads = (t: Threads) => Promise.all([...t.pools.map((p) => { p.quiet.close(); return p.pool.destroy(); }), t.props.destroy()]);

export function startJourneyRunner(o: RunnerOptions): Runner {
  const wallMs = o.limits?.wallMs ?? 30_000;
  const leaseMs = o.leaseMs ?? wallMs + 30_000;
  const pollMs = o.pollMs ?? 250;
  const idleMs = () => o.idleMs ?? longestRest(o.wakes, 5_000);
  const capacity = Math.max(1, o.threads) * PER_THREAD;
  const perOrg = Math.max(1, Math.floor(capacity * ORG_SHARE));
  const restarts: RestartLimits = { ...RESTART_DEFAULTS, ...o.restarts };
  /** Activations in hand per org: what a claim counts against the per-org share. */
  const used = new Map<string, number>();
  // Several activations per thread: one waiting for a host call (a trait write through the
  // ingestion path, a profile read) leaves the thread to the others. Each owns a QuickJS sandbox
  // while it runs, and QuickJS code runs synchronously between awaits, so they never interleave
  // inside one. One single-thread pool per thread, and an execution always goes to the same one
  // (by its id): the thread that parked its sandbox at a wait gets its resume (runtime/cache.ts),
  // which then continues instead of replaying.
  // The threads start with the first activation, not with the process: a server whose apps run no
  // journey starts none (each costs ~0.4 s of CPU to start and tens of MB to keep). That first
  // activation waits until every thread answered a warm-up task (QuickJS and Ajv loaded), so the
  // start-up counts against no deadline of its host calls or props checks.
  let threads: Promise<Threads> | null = null;
  const startThreads = async (): Promise<Threads> => {
    const pools = Array.from({ length: Math.max(1, o.threads) }, (): JourneyThread => {
      const pool = new Piscina({ filename: o.taskModule, minThreads: 1, maxThreads: 1, idleTimeout: 60_000, concurrentTasksPerWorker: PER_THREAD });
      return { pool, quiet: new QuietCollector({ run: (task) => pool.run(task), threads: 1 }) };
    });
    // propsSchemas are checked on threads of their own: a check is aborted at its activation's
    // deadline, which ends the thread it runs on, and must take no activation down with it. One
    // thread is kept (it idles without CPU).
    const props = new Piscina({ filename: o.propsTaskModule, minThreads: 1, maxThreads: Math.max(1, o.threads), idleTimeout: 60_000 });
    const t: Threads = { pools, props };
    try {
      await Promise.all([...pools.map((p) => p.pool.run({ kind: 'warm' } satisfies JourneyTask)), props.run(PROPS_WARM_UP)]);
    } catch (err) {
      await destroyThreads(t);
      throw err;
    }
    return t;
  };
  // A start that failed is tried again by the next activation.
  const ready = (): Promise<Threads> => (threads ??= startThreads().catch((err) => { threads = null; throw err; }));
  let rr = 0;
  const poolOf = (t: Threads, executionId: string) => t.pools[stickyIndex(executionId, t.pools.length)]!;
  const checkProps = (t: Threads) => (input: PropsInput, deadline: number) =>
    t.props.run(input, { signal: AbortSignal.timeout(Math.max(0, deadline - Date.now())) }) as Promise<PropsCheck>;
  const render = (t: Threads) => (code: string, props: Record<string, unknown>) => {
    const jt = t.pools[rr++ % t.pools.length]!;
    return jt.quiet.around(() => jt.pool.run({ kind: 'render', input: { code, props, limits: o.limits } } satisfies JourneyTask) as Promise<RenderResult>);
  };
  const codes = new Map<string, string>();
  const submit = batchSubmits(o.submit);
  const saver = createSaver(o.pool);
  const reads = createProfileReads(o.pool);
  const inFlight = new Set<Promise<void>>();
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let ticking = false;
  let again = false;
  let started: Promise<void> = Promise.resolve();
  let lastClaimAt = 0;

  const claim = (n: number): Promise<Row[]> => claimDue<Row>(o.pool, { limit: n, used, perOrg, leaseMs, leaseId: newId('lse') });

  const code = async (row: Row): Promise<string | null> => {
    const hit = codes.get(row.version_id);
    if (hit) return hit;
    const m = await versionModule(o.pool, row.org_id, row.version_id);
    if (!m) return null;
    if (codes.size >= 256) codes.clear();
    codes.set(row.version_id, m.code);
    return m.code;
  };

  /** Quiet hours deferred a send of this execution's activation in hand: until when (epoch ms). */
  const deferred = new Map<string, number>();

  const activate = async (row: Row, { journal, journalLease }: { journal: JournalEntry[]; journalLease: string | undefined }, src: string, now: number): Promise<Activation> => {
    const t = await ready();
    const ex: HostExecution = {
      id: row.id, orgId: row.org_id, appId: row.app_id, sourceId: row.source_id, profileId: row.profile_id, environment: row.environment, runSeq: row.run_seq,
      journeyKey: row.journey_key, deadline: Date.now() + wallMs,
    };
    const host = createHost({ pool: o.pool, reads, submit, render: render(t), sendEmail: o.sendEmail, webhookNotify: o.webhookNotify, checkProps: checkProps(t), warn: (m, f) => o.log.warn(m, f) }, ex);
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (m: HostRequest) => {
      host(m.call).then(
        (result) => port1.postMessage({ id: m.id, result } satisfies HostAnswer),
        (err) => {
          if (err instanceof DeferredSend) deferred.set(row.id, Math.max(err.until, deferred.get(row.id) ?? 0));
          port1.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) } satisfies HostAnswer);
        },
      ).catch(() => { /* the activation ended and closed its port */ });
    });
    try {
      const task: JourneyTask = {
        kind: 'activate', port: port2,
        input: { code: src, execution: { id: row.id, runId: row.run_id, seed: row.run_id, lease: row.lease_id, journalLease }, event: row.event, journal, limits: o.limits, now },
      };
      const jt = poolOf(t, row.id);
      return await jt.quiet.around(() => jt.pool.run(task, { transferList: [port2] }) as Promise<Activation>);
    } finally {
      port1.close();
    }
  };

  const runOne = async (row: Row): Promise<void> => {
    const { journal, journalLease } = resumeJournal(row);
    const src = await code(row);
    const now = Date.now();
    if (src === null) {
      await save(row, now, { status: 'failed', code: 'journey_error', message: `version ${row.version_id} is not available`, journal, logs: [], stats: { replayed: 0, hostCalls: 0, fuelUsed: 0, wallMs: 0 } });
      return;
    }
    let a: Activation;
    try { a = await activate(row, { journal, journalLease }, src, now); } catch (err) { deferred.delete(row.id); throw err; }
    const until = deferred.get(row.id);
    deferred.delete(row.id);
    await save(row, now, a.status === 'restart' ? restartOutcome(row, a) : a.status === 'retry' && until !== undefined ? { ...a, deferUntil: until } : a);
  };

  /** A restart past its bounds becomes a failure that says which bound. */
  const restartOutcome = (row: Row, a: Activation & { status: 'restart' }): Activation | (Activation & { delayMs: number }) => {
    const d = decideRestart(row.run_seq + 1, new Date(row.started_at).getTime(), Date.now(), restarts);
    if (d.ok) return { ...a, delayMs: d.delayMs };
    o.log.warn('journey execution failed: restart bound reached', { execution: row.id, org: row.org_id, message: d.message });
    return { status: 'failed', code: 'journey_error', message: d.message, journal: a.journal, logs: a.logs, stats: a.stats };
  };

  /** The outcome under the claim's lease, in batches with the other activations' (./save.ts). */
  const save = async (row: Row, began: number, a: Outcome): Promise<void> => {
    if (a.status === 'retry' && a.deferUntil === undefined) {
      o.log.warn('journey activation will be retried', { execution: row.id, message: a.message, inMs: retryDelayMs(row.attempts) });
    }
    await saver.save({ id: row.id, leaseId: row.lease_id, runSeq: row.run_seq, attempts: row.attempts, began, outcome: a });
  };

  /** When the earliest debounced start is due (epoch ms): at start-up, now. */
  let debounceAt = 0;
  /** The next wake of the timer (epoch ms), Infinity when none is set. */
  let timerAt = Infinity;
  const wakeAt = (at: number) => {
    if (closed || at >= timerAt) return;
    clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(() => { timerAt = Infinity; void tick(); }, Math.max(0, at - Date.now()));
    timer.unref();
  };
  /**
   * When to look again: at the earliest due execution nobody holds (by the store's clock), or after
   * the idle bound (other processes' work, leases of a process that died). Work that is due but
   * could not be claimed (the org's share is full, another process holds it) is looked at again
   * after pollMs; activations in hand look again as they finish.
   */
  const plan = async () => {
    if (timerAt <= Date.now() + pollMs) return;
    // Debounced starts (journey_debounce) are timers too: the earliest one counts.
    const d = await nextDebounceMs(o.pool);
    debounceAt = d === null ? Infinity : Date.now() + d;
    // One probe of executions_due_org per org (the index the claim uses; migration 31), as a named
    // statement: planning the lateral join was most of its cost on embedded Postgres.
    const r = await o.pool.query<{ ms: number | null }>({ name: 'headwater_next_due', text: NEXT_DUE });
    const ms = Math.min(r.rows[0]?.ms ?? Infinity, d ?? Infinity);
    wakeAt(Date.now() + (ms === Infinity ? idleMs() : ms <= 0 ? pollMs : Math.min(ms + 5, idleMs())));
  };

  const tick = async () => {
    if (closed) return;
    if (ticking) { again = true; return; }
    ticking = true;
    try {
      let planned = true;
      // Due debounced starts become executions first (any process may take them: SKIP LOCKED).
      if (debounceAt <= Date.now()) {
        debounceAt = Infinity;
        if (await startDebounced(o.pool, o.log, DEBOUNCE_BATCH) >= DEBOUNCE_BATCH) debounceAt = 0;
      }
      do {
        again = false;
        const room = capacity - inFlight.size;
        if (room <= 0) break;
        // While activations are in hand, claims come at most every CLAIM_GAP_MS: the ones finishing
        // meanwhile are replaced by one claim, not one claim each.
        const gapEnds = lastClaimAt + CLAIM_GAP_MS;
        if (inFlight.size > 0 && gapEnds > Date.now()) { wakeAt(gapEnds); break; }
        lastClaimAt = Date.now();
        const rows = await claim(room);
        for (const row of rows) {
          used.set(row.org_id, (used.get(row.org_id) ?? 0) + 1);
          const p: Promise<void> = runOne(row)
            .catch((err) => o.log.warn('journey activation failed; its lease will expire and it runs again', { execution: row.id, err: String(err) }))
            .finally(() => {
              const n = (used.get(row.org_id) ?? 1) - 1;
              if (n <= 0) used.delete(row.org_id); else used.set(row.org_id, n);
              inFlight.delete(p);
              kick();
            });
          inFlight.add(p);
        }
        if (rows.length === room) again = true;
        planned = rows.length === room;
      } while (again && !closed);
      if (!planned && !closed) await plan();
    } catch (err) {
      if (!closed) o.log.warn('claiming journey executions failed', { err: String(err) });
      wakeAt(Date.now() + Math.max(pollMs, 1000));
    } finally {
      ticking = false;
    }
  };
  /** A tick soon, once for everything that asked in this turn of the event loop. */
  let kicked = false;
  const kick = () => {
    if (closed || kicked) return;
    kicked = true;
    setImmediate(() => { kicked = false; void tick(); });
  };
  if (o.sole) started = o.pool.query(`UPDATE executions SET lease_until = NULL, lease_id = NULL WHERE lease_until IS NOT NULL`).then(() => undefined, () => undefined);
  void started.then(() => { void tick(); });
  // A wake from another process, or listening starting or stopping (the rest is picked again).
  const off = o.wakes.on('journeys', kick);

  return {
    notify() { kick(); },
    async close() {
      closed = true;
      off();
      clearTimeout(timer);
      await started;
      // Activations in hand finish (their outcome is saved); new ones are not claimed.
      await Promise.all([...inFlight]);
      const t = await threads?.catch(() => null);
      if (t) await destroyThreads(t);
      codes.clear();
    },
  };
}
