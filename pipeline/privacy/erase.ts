// The steps of one erasure, in order. Each is idempotent (a delete of what is left, an update to a
// value it already has), so a job interrupted anywhere runs all of them again from the start and
// ends in the same state. Order matters where one step needs what a later one removes: executions
// are cancelled first (no activation writes for the profile afterwards), e-mails and webhook
// deliveries are found through the executions before those go, and ClickHouse comes last so that
// nothing in Postgres (stored answers, the landing copy) can bring an event back after it.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';

export interface ErasureJob {
  id: string;
  orgId: string;
  profileIds: string[];
  identifiers: Array<{ kind: string; value: string }>;
}

export interface StepDeps {
  pool: pg.Pool;
  ch: ClickHouseClient;
  /** Rests after a chunk that took `ms` of the store's time; false once the eraser is closing. */
  pace(ms: number): Promise<boolean>;
}

type Step = (d: StepDeps, j: ErasureJob) => Promise<number>;

const ERASED = 'the profile was erased before it was sent';

/** The profile a stored answer names (identify: its own; track: its event's); indexed as such. */
const ANSWER_PROFILE = `COALESCE(result->>'profileId', result->'event'->>'profileId')`;

/** Rows per delete statement of the bulky steps. */
const CHUNK = 1000;

/**
 * Deletes the rows of `table` that `where` selects, CHUNK at a time, resting after each chunk
 * (`pace`): on embedded Postgres, one session serves ingestion too, and one statement over a big
 * history would hold it for the whole delete. Ends when a chunk finds nothing (not merely fewer
 * rows than CHUNK: a row that moved under a concurrent update is found again by the next chunk).
 */
async function chunked(d: StepDeps, table: string, where: string, params: unknown[]): Promise<number> {
  let total = 0;
  for (;;) {
    const t0 = Date.now();
    const r = await d.pool.query(
      `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${where} LIMIT ${CHUNK}))`, params);
    const n = r.rowCount ?? 0;
    total += n;
    if (n === 0 || !(await d.pace(Date.now() - t0))) return total;
  }
}

const executionIds = async (d: StepDeps, j: ErasureJob) =>
  (await d.pool.query<{ id: string }>('SELECT id FROM executions WHERE org_id = $1 AND profile_id = ANY($2)', [j.orgId, j.profileIds])).rows.map((r) => r.id);

/** The identifier values as they appear inside stored JSON calls (a JSON string, quotes included). */
const jsonValues = (j: ErasureJob) => [...new Set(j.identifiers.map((i) => JSON.stringify(i.value)))];

export const STEPS: Array<[string, Step]> = [
  // Running and waiting executions stop before anything else: a woken one must not write again.
  ['cancel executions', async (d, j) => (await d.pool.query(
    `UPDATE executions SET status = 'cancelled', wait = NULL, wake_value = NULL, wake_at = NULL, timer_deadline = NULL,
       lease_until = NULL, lease_id = NULL, inbox = '[]'::jsonb, ended_at = now(), updated_at = now()
     WHERE org_id = $1 AND profile_id = ANY($2) AND status IN ('running', 'waiting')`, [j.orgId, j.profileIds])).rowCount ?? 0],
  // E-mails and deliveries keep their counts and statuses; one not sent yet never will be.
  ['scrub e-mails', async (d, j) => (await d.pool.query(
    `UPDATE emails SET to_address = '', subject = '', html = '', text = '',
       last_error = CASE WHEN status = 'pending' THEN $3 ELSE last_error END,
       status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END,
       next_attempt_at = NULL, updated_at = now()
     WHERE org_id = $1 AND execution_id = ANY($2) AND (to_address <> '' OR subject <> '' OR html <> '' OR text <> '' OR status = 'pending')`,
    [j.orgId, await executionIds(d, j), ERASED])).rowCount ?? 0],
  ['scrub webhook deliveries', async (d, j) => (await d.pool.query(
    `UPDATE webhook_deliveries SET body = '',
       last_error = CASE WHEN status = 'pending' THEN $3 ELSE last_error END,
       status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END,
       next_attempt_at = NULL, updated_at = now()
     WHERE org_id = $1 AND execution_id = ANY($2) AND (body <> '' OR status = 'pending')`,
    [j.orgId, await executionIds(d, j), ERASED])).rowCount ?? 0],
  ['delete executions', async (d, j) => {
    const ids = await executionIds(d, j);
    if (!ids.length) return 0;
    await d.pool.query('DELETE FROM execution_logs WHERE execution_id = ANY($1)', [ids]);
    return (await d.pool.query('DELETE FROM executions WHERE org_id = $1 AND id = ANY($2)', [j.orgId, ids])).rowCount ?? 0;
  }],
  ['delete memberships', async (d, j) => (await d.pool.query(
    'DELETE FROM segment_members WHERE org_id = $1 AND profile_id = ANY($2)', [j.orgId, j.profileIds])).rowCount ?? 0],
  // The stored answers of its calls (messageId dedup): track answers hold the whole event. Before
  // the history: a segment naming an event for the first time fills history from them.
  ['delete stored answers', (d, j) => chunked(d, 'messages', `org_id = $1 AND ${ANSWER_PROFILE} = ANY($2)`, [j.orgId, j.profileIds])],
  ['delete event history', (d, j) => chunked(d, 'event_history', 'profile_id = ANY($1)', [j.profileIds])],
  ['delete system events in flight', async (d, j) => (await d.pool.query(
    `DELETE FROM event_outbox WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) p WHERE strpos(payload, p) > 0)`,
    [j.profileIds.map((p) => JSON.stringify(p))])).rowCount ?? 0],
  // Held, dead-lettered and refused calls that carry one of its identifiers.
  ['delete held and refused calls', async (d, j) => {
    const vals = jsonValues(j);
    if (!vals.length) return 0;
    const q = (table: string, col: string) => d.pool.query(
      `DELETE FROM ${table} WHERE org_id = $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) v WHERE strpos(${col}, v) > 0)`, [j.orgId, vals]);
    let n = 0;
    for (const [table, col] of [['quarantine', 'call::text'], ['dead_letters', 'call::text'], ['segment_rejections', 'call']] as const) {
      n += (await q(table, col)).rowCount ?? 0;
    }
    return n;
  }],
  ['delete identifiers', async (d, j) => (await d.pool.query(
    'DELETE FROM identifiers WHERE org_id = $1 AND profile_id = ANY($2)', [j.orgId, j.profileIds])).rowCount ?? 0],
  ['delete profiles', async (d, j) => (await d.pool.query(
    'DELETE FROM profiles WHERE org_id = $1 AND id = ANY($2)', [j.orgId, j.profileIds])).rowCount ?? 0],
  // The engine's lightweight DELETE, waited for; then checked, so that `completed` never hides a
  // row that an insert in flight landed meanwhile (the job runs again).
  ['delete events', async (d, j) => {
    const params = { org: j.orgId, ids: j.profileIds };
    const count = async () => {
      const rs = await d.ch.query({ query: 'SELECT count() AS n FROM events WHERE org_id = {org:String} AND profile_id IN {ids:Array(String)}', query_params: params, format: 'JSONEachRow' });
      return Number(((await rs.json()) as Array<{ n: string }>)[0]?.n ?? 0);
    };
    const before = await count();
    if (before === 0) return 0;
    await d.ch.command({
      query: 'DELETE FROM events WHERE org_id = {org:String} AND profile_id IN {ids:Array(String)}',
      query_params: params, clickhouse_settings: { lightweight_deletes_sync: 2, mutations_sync: 2 } as any,
    });
    const left = await count();
    if (left > 0) throw new Error(`${left} events of the profile are still in ClickHouse after the delete`);
    return before;
  }],
];
