// The floor's ClickHouse: every new event lands in an embedded chDB events table, as headwater's
// do (the contract's event reads are ClickHouse's), with headwater's own table (its ClickHouse
// migrations) and insert (pipeline/store/events.ts), in the cheapest way headwater has: after the
// answer, in few large inserts (up to 5,000 events, or after `lingerMs`: 1,000 ms on the NATS
// mode's store, 250 embedded, as headwater's defaults), one at a time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClickhouse } from '../pipeline/store/clickhouse.js';
import { CH_MIGRATIONS } from '../pipeline/store/migrations.js';
import { insertEvents } from '../pipeline/store/events.js';
import type { EventRecord } from '../pipeline/types.js';

const MAX_EVENTS = 5_000;

export interface FloorLanding {
  add(events: EventRecord[]): void;
  close(): Promise<void>;
}

export async function openFloorLanding(o: { lingerMs: number }): Promise<FloorLanding> {
  const dir = mkdtempSync(join(tmpdir(), 'floor-ch-'));
  const ch = await openClickhouse({ dataDir: dir });
  for (const m of CH_MIGRATIONS) for (const s of m.statements) await ch.client.command({ query: s });
  let waiting: EventRecord[] = [];
  let timer: NodeJS.Timeout | undefined;
  let landing: Promise<void> = Promise.resolve();
  const flush = () => {
    clearTimeout(timer); timer = undefined;
    if (waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    landing = landing.then(() => insertEvents(ch.client, batch)).catch((err: Error) => { process.stderr.write(`floor: ClickHouse insert failed: ${err.message}\n`); });
  };
  return {
    add(events) {
      for (const e of events) waiting.push(e);
      if (waiting.length >= MAX_EVENTS) flush();
      else timer ??= setTimeout(flush, o.lingerMs);
    },
    async close() {
      flush();
      await landing;
      await ch.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
