// Landing events in ClickHouse: one bounded JSONEachRow insert per batch.
import type { ClickHouseClient } from '@clickhouse/client';
import type { EventRecord } from '../types.js';

/** ISO 8601 (UTC) -> the DateTime64 text ClickHouse parses by default. */
export const chTime = (iso: string) => iso.replace('T', ' ').replace('Z', '');

const MAX_ROWS = 10_000;

/** An event as a row of the events table (JSONEachRow). */
export function eventRow(e: EventRecord) {
  return {
    org_id: e.orgId, app_id: e.appId, source_id: e.sourceId, profile_id: e.profileId, id: e.id,
    environment: e.environment, event: e.event, properties: JSON.stringify(e.properties),
    timestamp: chTime(e.timestamp), received_at: chTime(e.receivedAt), message_id: e.messageId,
    context: e.context ? JSON.stringify(e.context) : '',
  };
}

export async function insertEvents(ch: ClickHouseClient, events: EventRecord[]): Promise<void> {
  for (let i = 0; i < events.length; i += MAX_ROWS) {
    const slice = events.slice(i, i + MAX_ROWS);
    // Awaited before the next slice and before the caller acks: ClickHouse's pace is the pace.
    await ch.insert({
      table: 'events',
      format: 'JSONEachRow',
      values: slice.map(eventRow),
    });
  }
}
