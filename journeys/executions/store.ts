// Reads and the cancel of executions, for the routes. Every query is scoped by org.
import type pg from 'pg';

const COLUMNS = `id, org_id, journey_key, profile_id, trigger_event_id, run_id, release_id, environment, status, step, timer_deadline,
  journal_entries, error, started_at, updated_at, ended_at, exit_reason, converted, converted_at, holdout, variants`;

export const executionOut = (r: any) => ({
  id: r.id, orgId: r.org_id, journeyKey: r.journey_key, profileId: r.profile_id,
  // One workflow per (journey, trigger event); a restart keeps it and takes a new run id.
  workflowId: `${r.journey_key}:${r.trigger_event_id}`, runId: r.run_id, releaseId: r.release_id,
  environment: r.environment, status: r.status, step: r.step ?? null, timerDeadline: r.timer_deadline ?? null,
  journalEntries: r.journal_entries, error: r.error ?? null, startedAt: r.started_at, updatedAt: r.updated_at, endedAt: r.ended_at ?? null,
  exitReason: r.exit_reason ?? null, converted: r.converted === true, convertedAt: r.converted_at ?? null, holdout: r.holdout === true,
  variants: r.variants ?? {},
});

export interface ExecutionFilter {
  journey?: string; release?: string; status?: string; profileId?: string; since?: string; beforeId?: string; limit: number;
  converted?: boolean; holdout?: boolean; exitReason?: string;
}

/** Newest first (ids are time-ordered); fetches `limit + 1` to tell whether more exist. */
export async function listExecutions(pool: pg.Pool, orgId: string, f: ExecutionFilter) {
  const args: unknown[] = [orgId];
  const where = ['org_id = $1'];
  const add = (sql: string, v: unknown) => { args.push(v); where.push(sql.replace('?', `$${args.length}`)); };
  if (f.journey !== undefined) add('journey_key = ?', f.journey);
  if (f.release !== undefined) add('release_id = ?', f.release);
  if (f.status !== undefined) add('status = ?', f.status);
  if (f.profileId !== undefined) add('profile_id = ?', f.profileId);
  if (f.since !== undefined) add('started_at >= ?::timestamptz', f.since);
  if (f.converted !== undefined) add('converted = ?', f.converted);
  if (f.holdout !== undefined) add('holdout = ?', f.holdout);
  if (f.exitReason !== undefined) add('exit_reason = ?', f.exitReason);
  if (f.beforeId !== undefined) add('id < ?', f.beforeId);
  args.push(f.limit + 1);
  const r = await pool.query(`SELECT ${COLUMNS} FROM executions WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${args.length}`, args);
  return r.rows;
}

/** One execution with its journal and every log line of every run, or null. */
export async function getExecution(pool: pg.Pool, orgId: string, id: string) {
  const r = await pool.query(`SELECT ${COLUMNS}, journal FROM executions WHERE org_id = $1 AND id = $2`, [orgId, id]);
  const x = r.rows[0];
  if (!x) return null;
  const logs = await pool.query(
    `SELECT level, message, created_at FROM execution_logs WHERE execution_id = $1 ORDER BY run_seq, seq`, [id]);
  return {
    ...executionOut(x),
    journal: x.journal,
    logs: logs.rows.map((l, i) => ({ seq: i, level: l.level, message: l.message, createdAt: l.created_at })),
  };
}

export type CancelResult = { execution: ReturnType<typeof executionOut> } | { notFound: true } | { finished: string };

/**
 * A running or waiting execution becomes cancelled: its timer and wait are dropped, and an
 * activation in progress has its outcome discarded (its lease no longer matches).
 */
export async function cancelExecution(pool: pg.Pool, orgId: string, id: string): Promise<CancelResult> {
  const r = await pool.query(
    `UPDATE executions SET status = 'cancelled', wait = NULL, wake_value = NULL, wake_at = NULL, timer_deadline = NULL,
       lease_until = NULL, lease_id = NULL, inbox = '[]'::jsonb, ended_at = now(), updated_at = now()
     WHERE org_id = $1 AND id = $2 AND status IN ('running', 'waiting') RETURNING ${COLUMNS}`, [orgId, id]);
  if (r.rows[0]) return { execution: executionOut(r.rows[0]) };
  const cur = await pool.query('SELECT status FROM executions WHERE org_id = $1 AND id = $2', [orgId, id]);
  return cur.rows[0] ? { finished: cur.rows[0].status } : { notFound: true };
}
