// The runningExecutions quota (issue 23) at the one place executions start: the landed batch's
// insert. A start past the org's limit is not queued: it is recorded as `failed` with error
// `over_quota: ...`, so the refusal is visible in the executions API and a redelivered trigger
// stays a no-op. Waiting instead would need a queue per org that grows without bound while the
// org is at its limit; refusing keeps the cost of the check one bounded, indexed count per org.
// (A refused start still counts as an entry for the journey's cooldown.)
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { lockQuota, OverQuotaError } from '../../pipeline/quotas.js';

/**
 * Takes the runningExecutions lock of each org (in sorted order: two landing transactions never
 * wait on each other in a cycle) and returns the limits of those that have one.
 */
export async function lockExecutionQuotas(c: pg.PoolClient, orgIds: string[]): Promise<Map<string, number>> {
  const limits = new Map<string, number>();
  for (const org of [...new Set(orgIds)].sort()) {
    const l = await lockQuota(c, org, 'runningExecutions');
    if (l !== null) limits.set(org, l);
  }
  return limits;
}

/**
 * After the insert, under the locks: the last starts of an org past its limit become `failed`.
 * `started` in insert order. Returns how many were refused.
 */
export async function refuseOverQuota(c: pg.PoolClient, log: Logger, limits: Map<string, number>, started: Array<{ id: string; org_id: string }>): Promise<number> {
  let refused = 0;
  for (const [org, limit] of limits) {
    const mine = started.filter((x) => x.org_id === org).map((x) => x.id);
    if (mine.length === 0) continue;
    // Bounded: counting stops past the limit plus this batch, so an org far over it costs no more.
    const r = await c.query<{ n: string }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM executions WHERE org_id = $1 AND status IN ('running', 'waiting') LIMIT $2) x`,
      [org, limit + mine.length + 1]);
    const excess = Math.min(mine.length, Number(r.rows[0]!.n) - limit);
    if (excess <= 0) continue;
    const ids = mine.slice(mine.length - excess);
    const e = new OverQuotaError('runningExecutions', limit, 'the execution did not start');
    await c.query(
      `UPDATE executions SET status = 'failed', error = $2, wake_at = NULL, ended_at = now(), updated_at = now() WHERE id = ANY($1::text[])`,
      [ids, `over_quota: ${e.message}`]);
    log.warn('journey executions refused: org at its runningExecutions limit', { org, limit, refused: excess });
    refused += excess;
  }
  return refused;
}
