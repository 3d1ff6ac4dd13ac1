// The journey side's part of a profile's NDJSON export (docs/privacy.md): its executions (journal
// and logs), then the e-mails they sent, by id pages. The privacy export appends these lines after
// the profile and its events (pipeline/privacy/export.ts takes them as `more`).
import type pg from 'pg';
import { getExecution } from './store.js';
import { toEmail } from '../email/mod.js';

const line = (type: string, v: Record<string, unknown>) => JSON.stringify({ type, ...v }) + '\n';

export async function* exportExecutions(pool: pg.Pool, orgId: string, ids: string[]): AsyncGenerator<string> {
  const execIds: string[] = [];
  let cursor = '';
  for (;;) {
    const r = await pool.query<{ id: string }>(
      'SELECT id FROM executions WHERE org_id = $1 AND profile_id = ANY($2) AND id > $3 ORDER BY id LIMIT 100', [orgId, ids, cursor]);
    for (const x of r.rows) {
      const detail = await getExecution(pool, orgId, x.id);
      if (detail) yield line('execution', detail as unknown as Record<string, unknown>);
      execIds.push(x.id);
    }
    if (r.rows.length < 100) break;
    cursor = r.rows[r.rows.length - 1]!.id;
  }
  for (let i = 0; i < execIds.length; i += 100) {
    const r = await pool.query('SELECT * FROM emails WHERE org_id = $1 AND execution_id = ANY($2) ORDER BY id', [orgId, execIds.slice(i, i + 100)]);
    for (const m of r.rows) yield line('email', toEmail(m) as unknown as Record<string, unknown>);
  }
}
