// Runs pending erasures, in every process that serves or works. A job is claimed with
// FOR UPDATE SKIP LOCKED and a lease that a heartbeat renews while its steps run; a process that
// dies leaves the lease to expire and another (or the same one restarted) takes the job and runs
// its steps again from the first (they are idempotent). `completed` is written, under the lease,
// only after the last step succeeded. Jobs touch only their own profile's rows, so ingestion of
// other profiles goes on meanwhile.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../lib/log.js';
import { STEPS, type ErasureJob } from './erase.js';
import { leaseRest } from '../lease-rest.js';
import type { Wakes } from '../wakes.js';


export interface EraserOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: Logger;
  /** How long a claim holds a job without a heartbeat (renewed every third of it). */
  leaseMs: number;
  /** Pause between steps (spreads an erasure's load; 0 runs them back to back). */
  pauseMs: number;
  /** How often pending jobs are looked for while `wakes` do not listen, and after a failed pass. */
  pollMs: number;
  /** Requests filed by other processes wake it; while they listen it does not poll (pipeline/lease-rest.ts). */
  wakes: Wakes;
  /** This process is the database's only user (embedded): leases left by a previous run are void. */
  sole?: boolean;
}

export interface Eraser { notify(): void; close(): Promise<void> }

/** Rest after a chunk, as a multiple of the chunk's own time. */
const REST_FACTOR = 4;

export function startEraser(o: EraserOptions): Eraser {
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  const sleepers = new Set<() => void>();
  const sleep = (ms: number) => new Promise<void>((r) => {
    const t = setTimeout(done, ms);
    function done() { clearTimeout(t); sleepers.delete(done); r(); }
    sleepers.add(done);
  });

  // The bulky steps delete in chunks and rest four times as long as each chunk took: an erasure
  // takes at most a fifth of the store's time, whatever else runs (docs/privacy.md).
  const pace = async (ms: number) => {
    if (closed) return false;
    await sleep(Math.max(2, REST_FACTOR * ms));
    return !closed;
  };

  const claim = async (token: string): Promise<ErasureJob | undefined> => {
    const r = await o.pool.query(
      `UPDATE erasures SET lease_until = now() + make_interval(secs => $1::float8 / 1000), lease_token = $2, attempts = attempts + 1
       WHERE id = (SELECT id FROM erasures WHERE status = 'pending' AND (lease_until IS NULL OR lease_until < now())
                   ORDER BY requested_at LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING id, org_id, profile_ids, identifiers, attempts`, [o.leaseMs, token]);
    const row = r.rows[0];
    if (!row) return undefined;
    if (row.attempts > 1) o.log.info('erasure resumed', { erasureId: row.id, attempt: row.attempts });
    return { id: row.id, orgId: row.org_id, profileIds: row.profile_ids, identifiers: row.identifiers };
  };

  /** Renews the lease and records the step; false when the lease was lost (another process has the job). */
  const hold = async (job: ErasureJob, token: string, step: string | null) => (await o.pool.query(
    `UPDATE erasures SET lease_until = now() + make_interval(secs => $3::float8 / 1000), step = COALESCE($4, step)
     WHERE id = $1 AND lease_token = $2 AND status = 'pending'`, [job.id, token, o.leaseMs, step])).rowCount === 1;

  const run = async (job: ErasureJob, token: string) => {
    const started = Date.now();
    const beat = setInterval(() => { hold(job, token, null).catch(() => {}); }, Math.max(100, Math.floor(o.leaseMs / 3)));
    try {
      for (const [name, step] of STEPS) {
        if (closed) return;
        if (!(await hold(job, token, name))) { o.log.warn('erasure lease lost', { erasureId: job.id, step: name }); return; }
        const t0 = Date.now();
        const n = await step({ pool: o.pool, ch: o.ch, pace }, job);
        o.log.info('erasure step', { erasureId: job.id, step: name, rows: n, ms: Date.now() - t0 });
        if (o.pauseMs > 0) await sleep(o.pauseMs);
      }
      const done = await o.pool.query(
        `UPDATE erasures SET status = 'completed', completed_at = now(), step = NULL, lease_until = NULL, lease_token = NULL
         WHERE id = $1 AND lease_token = $2 AND status = 'pending'`, [job.id, token]);
      if (done.rowCount === 1) o.log.info('erasure completed', { erasureId: job.id, orgId: job.orgId, profiles: job.profileIds.length, ms: Date.now() - started });
    } finally {
      clearInterval(beat);
    }
  };

  const sole = o.sole === true;
  let voided = !sole;
  /** The next look: at the end of the earliest lease (a job given back after a failure). */
  const rest = leaseRest({
    pool: o.pool, pollMs: o.pollMs, wakes: o.wakes, topic: 'erase', look: () => kick(),
    leaseEndMs: `SELECT (EXTRACT(EPOCH FROM min(lease_until) - now()) * 1000)::float8 AS ms FROM erasures WHERE status = 'pending' AND lease_until IS NOT NULL`,
  });

  const pass = async () => {
    if (!voided) await o.pool.query(`UPDATE erasures SET lease_until = NULL WHERE status = 'pending' AND lease_until IS NOT NULL`);
    voided = true;
    while (!closed) {
      const token = randomUUID();
      const job = await claim(token);
      if (!job) return;
      try {
        await run(job, token);
      } catch (err) {
        // Released for a later attempt (after a pause, so a failing store is not hammered).
        o.log.warn('erasure step failed; it will be retried', { erasureId: job.id, err: String(err) });
        await o.pool.query(`UPDATE erasures SET lease_until = now() + interval '5 seconds' WHERE id = $1 AND lease_token = $2`, [job.id, token]).catch(() => {});
      }
    }
  };

  const passAndSchedule = async () => {
    let ok = false;
    try { await pass(); ok = true; } finally {
      if (!closed) await rest.after(ok);
    }
  };

  const kick = () => {
    if (closed) return;
    if (running) { again = true; return; }
    running = passAndSchedule()
      .catch((err) => o.log.warn('erasure pass failed', { err: String(err) }))
      .finally(() => { running = undefined; if (again) { again = false; kick(); } });
  };

  kick();
  return {
    notify: kick,
    async close() {
      closed = true;
      rest.close();
      for (const wake of [...sleepers]) wake();
      await running;
    },
  };
}
