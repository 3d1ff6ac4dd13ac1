// Calls a Segment route answered 200 but did not apply: kept with their reason, one statement per
// request, so nothing is silently lost (Segment's SDKs drop a request only on a 4xx).
import type pg from 'pg';
import type { WriteKeyInfo } from './keys.js';

export interface Rejection { call: unknown; status: number; code: string; message: string; messageId: string | null }

// Postgres text refuses NUL; the call is JSON (NULs escaped) but messages may quote client values.
const clean = (s: string) => s.replace(/\u0000/g, '\uFFFD');

export async function recordRejections(pool: pg.Pool, info: WriteKeyInfo, list: Rejection[]): Promise<void> {
  await pool.query(
    `INSERT INTO segment_rejections (org_id, source_id, message_id, status, code, message, call)
     SELECT $1, $2, m, s, c, msg, body FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::text[]) AS t(m, s, c, msg, body)`,
    [info.orgId, info.sourceId,
      list.map((r) => (r.messageId === null ? null : clean(r.messageId).slice(0, 200))),
      list.map((r) => r.status), list.map((r) => r.code), list.map((r) => clean(r.message)),
      list.map((r) => clean(JSON.stringify(r.call) ?? 'null'))],
  );
}
