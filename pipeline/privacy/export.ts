// A profile's data as NDJSON lines, produced page by page: the HTTP layer pulls the next line only
// once the socket took the previous ones, so a history of any length is held a page at a time.
// Order: the profile (with identifiers, memberships and merged records), its events (the merged
// records' included, oldest first), then what `more` adds (executions with journal and logs, their
// e-mails).
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import { profileOut, type ProfileRow } from '../identity.js';
import { chTime } from '../store/events.js';

const PAGE = 1000;
const line = (type: string, v: Record<string, unknown>) => JSON.stringify({ type, ...v }) + '\n';
const isoOf = (ch: string) => (ch.includes('T') ? ch : ch.replace(' ', 'T')) + (ch.endsWith('Z') ? '' : 'Z');

export interface ExportDeps {
  pool: pg.Pool;
  ch: ClickHouseClient;
  /** Lines the other side of the house keeps of these profiles (the profile and its merged ones),
   * appended after the events: the composition passes the journey side's export here. */
  more?: (orgId: string, profileIds: string[]) => AsyncIterable<string>;
}

/** The profile's row, or undefined when the org has no such profile (checked before the answer starts). */
export async function exportTarget(pool: pg.Pool, orgId: string, id: string): Promise<ProfileRow | undefined> {
  return (await pool.query<ProfileRow>('SELECT * FROM profiles WHERE org_id = $1 AND id = $2', [orgId, id])).rows[0];
}

export async function* exportProfile(d: ExportDeps, row: ProfileRow): AsyncGenerator<string> {
  const orgId = row.org_id as string;
  const id = row.id as string;
  const merged = (await d.pool.query<ProfileRow>('SELECT * FROM profiles WHERE org_id = $1 AND merged_into = $2 ORDER BY id', [orgId, id])).rows;
  const ids = [id, ...merged.map((m) => m.id as string)];
  const memberships = (await d.pool.query<{ segment_id: string; entered_at: Date }>(
    'SELECT segment_id, entered_at FROM segment_members WHERE org_id = $1 AND profile_id = $2 ORDER BY segment_id', [orgId, id])).rows;
  const mergedOut = [];
  for (const m of merged) mergedOut.push(await profileOut(d.pool, m));
  yield line('profile', {
    ...(await profileOut(d.pool, row)),
    memberships: memberships.map((m) => ({ segmentId: m.segment_id, enteredAt: new Date(m.entered_at).toISOString() })),
    merged: mergedOut,
  });

  // Events: keyset pages over (timestamp, id), as the events route reads them (FINAL collapses
  // redelivered copies).
  let after: [string, string] | undefined;
  for (;;) {
    const params: Record<string, unknown> = { org: orgId, ids, lim: PAGE };
    let cond = '';
    if (after) { params.ats = after[0]; params.aid = after[1]; cond = `AND (timestamp, id) > (toDateTime64({ats:String}, 3, 'UTC'), {aid:String})`; }
    const rs = await d.ch.query({
      query: `SELECT id, org_id, app_id, source_id, profile_id, environment, event, properties,
                toString(timestamp) AS ts, toString(received_at) AS rts, message_id, context
              FROM events FINAL WHERE org_id = {org:String} AND profile_id IN {ids:Array(String)} ${cond}
              ORDER BY timestamp, id LIMIT {lim:UInt32}`,
      query_params: params, format: 'JSONEachRow',
    });
    const rows = (await rs.json()) as any[];
    for (const r of rows) {
      const e: Record<string, unknown> = {
        id: r.id, orgId: r.org_id, appId: r.app_id, sourceId: r.source_id, profileId: r.profile_id, environment: r.environment,
        event: r.event, properties: JSON.parse(r.properties), timestamp: isoOf(r.ts), receivedAt: isoOf(r.rts), messageId: r.message_id,
      };
      if (r.context) e.context = JSON.parse(r.context);
      yield line('event', e);
    }
    if (rows.length < PAGE) break;
    const last = rows[rows.length - 1];
    after = [chTime(isoOf(last.ts)), last.id];
  }

  // What other sides keep of the profile (the journey side: executions, then their e-mails).
  if (d.more) yield* d.more(orgId, ids);
}
