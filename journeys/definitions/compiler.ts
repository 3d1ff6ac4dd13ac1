// The compiler of a process: claims versions still `compiling` (a lease, so several processes never
// compile one version at once and a version a crashed process held is compiled again once its lease
// ends), runs each on the Piscina compile pool (a thread, off the event loop and off the ingestion
// pool), and records `ready` or `failed` per version. A compile that outlives its deadline has its
// thread terminated and fails its own version only.
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { readArtifact } from './artifacts.js';
import { parseControls } from './controls.js';
import { DEFAULT_LOAD_LIMITS, type CompileInput, type CompileOutput, type LoadLimits } from './load.js';
import { leaseRest } from '../../pipeline/lease-rest.js';
import type { Wakes } from '../../pipeline/wakes.js';

export interface CompilerOptions {
  pool: pg.Pool;
  log: Logger;
  /** URL of the Piscina task module (workers/compile-task.js), given by the caller that wires it. */
  taskModule: string;
  threads?: number;
  /** How often versions are looked for while `wakes` do not listen, and after a failed pass. */
  pollMs?: number;
  /** Pushes made in other processes wake it; while they listen it does not poll (pipeline/lease-rest.ts). */
  wakes: Wakes;
  /** How long a claim holds a version; longer than `timeoutMs`. */
  leaseMs?: number;
  /** Wall-clock bound of one compile from the moment its thread starts it (thread start-up not
   * included); the thread is terminated past it. Default 10 s. */
  timeoutMs?: number;
  /** A version claimed this many times without finishing (its compiles kill the process) fails. */
  maxAttempts?: number;
  limits?: LoadLimits;
  /** This process is the only one using the database (embedded): leases of a previous run are void. */
  sole?: boolean;
}

export interface Compiler {
  /** A push filed versions: look now rather than at the next poll. */
  kick(): void;
  /** Resolves when nothing claimable is left (tests, benchmarks). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** How long a compile may wait for its thread to start it (thread, QuickJS and esbuild start-up). */
const STARTUP_MS = 120_000;

interface Claimed { id: string; org_id: string; kind: 'journey' | 'template'; key: string; bundle_digest: string; attempts: number; manifest: Record<string, unknown> }

export function startCompiler(o: CompilerOptions): Compiler {
  const threads = Math.max(1, o.threads ?? 1);
  const leaseMs = o.leaseMs ?? 60_000;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const maxAttempts = o.maxAttempts ?? 3;
  const pollMs = o.pollMs ?? 2000;
  const piscina = new Piscina({ filename: o.taskModule, minThreads: 0, maxThreads: threads, idleTimeout: 30_000 });
  let closed = false;
  let running: Promise<void> | null = null;
  let again = false;
  const idleWaiters: Array<() => void> = [];

  const claim = async (): Promise<Claimed[]> => {
    const r = await o.pool.query<Claimed>(
      `UPDATE versions v SET lease_until = now() + make_interval(secs => $1), attempts = v.attempts + 1
       FROM (SELECT id FROM versions WHERE status = 'compiling' AND (lease_until IS NULL OR lease_until < now())
             ORDER BY pushed_at LIMIT $2 FOR UPDATE SKIP LOCKED) c
       WHERE v.id = c.id
       RETURNING v.id, v.org_id, v.kind, v.key, v.bundle_digest, v.attempts, v.manifest`, [leaseMs / 1000, threads]);
    return r.rows;
  };

  const finish = async (v: Claimed, out: CompileOutput) => {
    const r = await o.pool.query(
      `UPDATE versions SET status = $2, module_code = $3, module_digest = $4, error = $5, compiled_at = now(), lease_until = NULL
       WHERE id = $1 AND status = 'compiling' RETURNING org_id, kind, key`,
      [v.id, out.ok ? 'ready' : 'failed', out.ok ? out.code : null, out.ok ? out.moduleDigest : null, out.ok ? null : out.error]);
    // A journey's answer moves to its newest ready version.
    if (out.ok && r.rows[0]?.kind === 'journey') {
      await o.pool.query(
        `WITH j AS (UPDATE journeys SET updated_at = now() WHERE org_id = $1 AND key = $2)
         UPDATE orgs SET journeys_version = journeys_version + 1 WHERE id = $1`, [v.org_id, v.key]);
      await logIfLive(v);
    }
  };

  // On an enabled journey a ready version runs at once, whoever pushed it: the log names the
  // version, its push and the push's author, unless a newer push's version is already live.
  const logIfLive = async (v: Claimed) => {
    const live = await o.pool.query(
      `SELECT v.push_id, p.created_by, p.created_by_scheme, p.created_by_role
       FROM versions v JOIN journeys j ON j.org_id = v.org_id AND j.key = v.key AND j.enabled
       JOIN pushes p ON p.id = v.push_id
       WHERE v.id = $1 AND NOT EXISTS (SELECT 1 FROM versions n WHERE n.org_id = v.org_id AND n.kind = 'journey'
         AND n.key = v.key AND n.status = 'ready' AND n.push_seq > v.push_seq)`, [v.id]);
    const x = live.rows[0];
    if (x) {
      o.log.info('journey version live', {
        orgId: v.org_id, journey: v.key, versionId: v.id, pushId: x.push_id,
        createdBy: x.created_by, createdByScheme: x.created_by_scheme, createdByRole: x.created_by_role,
      });
    }
  };

  const compileOne = async (v: Claimed): Promise<void> => {
    if (v.attempts > maxAttempts) {
      await finish(v, { ok: false, error: `compile did not finish after ${maxAttempts} attempts` });
      return;
    }
    // A bad control option (exitOn, goal, holdout, enrollment) fails this version with its message.
    if (v.kind === 'journey') {
      const c = parseControls(v.manifest ?? {});
      if (!c.ok) { await finish(v, { ok: false, error: c.message }); return; }
    }
    const bundle = await readArtifact(o.pool, v.org_id, v.bundle_digest);
    if (!bundle) { await finish(v, { ok: false, error: `bundle artifact ${v.bundle_digest} is not stored` }); return; }
    const task: CompileInput & { limits: LoadLimits } = { kind: v.kind, key: v.key, bundle, limits: o.limits ?? DEFAULT_LOAD_LIMITS };
    let out: CompileOutput;
    // The deadline runs from the moment the thread starts this compile (it says so on `started`):
    // a thread's first task also starts the thread, QuickJS and esbuild, seconds on a loaded machine.
    const { port1, port2 } = new MessageChannel();
    const ac = new AbortController();
    let timer = setTimeout(() => ac.abort(), STARTUP_MS);
    port1.once('message', () => { clearTimeout(timer); timer = setTimeout(() => ac.abort(), timeoutMs); });
    try {
      out = await piscina.run({ ...task, started: port2 }, { signal: ac.signal, transferList: [port2] }) as CompileOutput;
    } catch (err) {
      const aborted = (err as Error)?.name === 'AbortError' || /abort/i.test(String((err as Error)?.message));
      // A bundle that loops is stopped inside the sandbox. The thread outlives its deadline when
      // QuickJS is stuck in one native operation (allocating towards its memory cap takes it 10-70 s)
      // or on an overloaded machine: try once more, then fail.
      if (aborted && v.attempts < 2) {
        await o.pool.query(`UPDATE versions SET lease_until = NULL WHERE id = $1 AND status = 'compiling'`, [v.id]);
        again = true;
        return;
      }
      out = { ok: false, error: aborted ? `compile did not finish within ${timeoutMs} ms` : `compile failed: ${String((err as Error)?.message ?? err)}` };
    } finally {
      clearTimeout(timer);
      port1.close();
    }
    const t = Date.now();
    await finish(v, out);
    o.log.debug('version compiled', { id: v.id, ok: out.ok, ms: Date.now() - t });
  };

  const pass = async () => {
    for (;;) {
      again = false;
      const batch = closed ? [] : await claim();
      // Database trouble leaves the claim to expire: the version is compiled again later.
      await Promise.all(batch.map((v) => compileOne(v).catch((err) => o.log.warn('compile not recorded', { id: v.id, err: String(err) }))));
      if (batch.length === 0 && !again) break;
    }
  };

  /** The next look: when the earliest claim ends (a compile not recorded, a process that died). */
  const rest = leaseRest({
    pool: o.pool, pollMs, wakes: o.wakes, topic: 'compile', look: () => trigger(),
    leaseEndMs: `SELECT (EXTRACT(EPOCH FROM min(lease_until) - now()) * 1000)::float8 AS ms FROM versions WHERE status = 'compiling' AND lease_until IS NOT NULL`,
  });

  const trigger = () => {
    if (closed) return;
    if (running) { again = true; return; }
    let ok = false;
    running = pass()
      .then(() => { ok = true; }, (err) => o.log.warn('compile pass failed', { err: String(err) }))
      .then(() => (closed ? undefined : rest.after(ok)))
      .finally(() => {
        running = null;
        if (again && !closed) trigger();
        else for (const w of idleWaiters.splice(0)) w();
      });
  };

  const start = async () => {
    if (o.sole) await o.pool.query(`UPDATE versions SET lease_until = NULL WHERE status = 'compiling' AND lease_until IS NOT NULL`);
    trigger();
  };
  const started = start().catch((err) => o.log.warn('compiler start failed', { err: String(err) }));

  return {
    kick: trigger,
    async idle() {
      await started;
      if (!running) return;
      await new Promise<void>((r) => idleWaiters.push(r));
    },
    async close() {
      closed = true;
      rest.close();
      await started;
      await running;
      await piscina.destroy();
    },
  };
}
