// Reconciliation of acknowledged and landed events: every track event whose answer Postgres stored
// in a window (messages.result.event, created_at) is looked up in ClickHouse by id. The check that
// would have shown a loss at once, whatever its cause; with `repair`, the missing events are landed
// from their stored copies as recoverLanding (landing.ts) does after a stop.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import { insertEvents } from './store/events.js';
import { readDropCounts, type DropCount } from './drops.js';
import type { EventRecord } from './types.js';

export interface ReconcileOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  since: Date;
  until: Date;
  orgId?: string;
  /** Land the missing events (with onLanded, as the writer does). */
  repair?: boolean;
  onLanded?: (events: EventRecord[]) => Promise<void>;
  /** Missing events listed at most. */
  limit?: number;
}

export interface MissingEvent { orgId: string; appId: string; messageId: string; eventId: string; profileId: string; event: string; storedAt: string }

export interface Reconciliation {
  since: string; until: string;
  acknowledged: number; landed: number; missing: number; collapsed: number; repaired: number;
  missingEvents: MissingEvent[];
  drops: DropCount[];
}

const PAGE = 5_000;

export async function reconcile(o: ReconcileOptions): Promise<Reconciliation> {
  const limit = o.limit ?? 100;
  const out: Reconciliation = {
    since: o.since.toISOString(), until: o.until.toISOString(),
    acknowledged: 0, landed: 0, missing: 0, collapsed: 0, repaired: 0, missingEvents: [], drops: [],
  };
  let after: [string, string, string, string] | undefined;
  for (;;) {
    // Keyset pages in storage order; created_at as text keeps its microseconds.
    const params: unknown[] = [o.since.toISOString(), o.until.toISOString()];
    let where = 'created_at >= $1 AND created_at < $2 AND result ? \'event\'';
    if (o.orgId) { params.push(o.orgId); where += ` AND org_id = $${params.length}`; }
    if (after) {
      params.push(...after);
      const n = params.length;
      where += ` AND (created_at, org_id, app_id, message_id) > ($${n - 3}::timestamptz, $${n - 2}, $${n - 1}, $${n})`;
    }
    const r = await o.pool.query<{ created_at: string; org_id: string; app_id: string; message_id: string; event: EventRecord }>(
      `SELECT created_at::text AS created_at, org_id, app_id, message_id, result->'event' AS event FROM messages
       WHERE ${where} ORDER BY created_at, org_id, app_id, message_id LIMIT ${PAGE}`, params);
    if (r.rows.length === 0) break;
    out.acknowledged += r.rows.length;
    const copies = await landedCopies(o.ch, r.rows.map((x) => x.event));
    const missing: typeof r.rows = [];
    for (const row of r.rows) {
      const n = copies.get(row.event.id) ?? 0;
      if (n === 0) missing.push(row);
      else { out.landed++; out.collapsed += n - 1; }
    }
    out.missing += missing.length;
    for (const row of missing) {
      if (out.missingEvents.length >= limit) break;
      out.missingEvents.push({
        orgId: row.org_id, appId: row.app_id, messageId: row.message_id, eventId: row.event.id,
        profileId: row.event.profileId, event: row.event.event, storedAt: new Date(row.created_at).toISOString(),
      });
    }
    if (o.repair && missing.length) {
      const events = missing.map((x) => x.event);
      await insertEvents(o.ch, events);
      if (o.onLanded) await o.onLanded(events);
      out.repaired += events.length;
    }
    const last = r.rows[r.rows.length - 1]!;
    after = [last.created_at, last.org_id, last.app_id, last.message_id];
    if (r.rows.length < PAGE) break;
  }
  out.drops = await readDropCounts(o.pool);
  return out;
}

/** Rows ClickHouse holds per event id (without FINAL: more than one is a re-emitted copy). */
async function landedCopies(ch: ClickHouseClient, events: EventRecord[]): Promise<Map<string, number>> {
  // One query per (org, app): both lead the table's sort key, so each reads only its own ranges.
  const groups = new Map<string, { org: string; app: string; ids: string[] }>();
  for (const e of events) {
    const k = `${e.orgId}\u0000${e.appId}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { org: e.orgId, app: e.appId, ids: [] }));
    g.ids.push(e.id);
  }
  const copies = new Map<string, number>();
  for (const g of groups.values()) {
    const rs = await ch.query({
      query: `SELECT id, count() AS n FROM events WHERE org_id = {org:String} AND app_id = {app:String} AND id IN {ids:Array(String)} GROUP BY id`,
      query_params: g, format: 'JSONEachRow',
    });
    for (const row of (await rs.json()) as Array<{ id: string; n: string | number }>) copies.set(row.id, Number(row.n));
  }
  return copies;
}
