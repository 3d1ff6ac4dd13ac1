import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { lockDir } from './lock.js';

export interface Clickhouse {
  client: ClickHouseClient;
  embedded: boolean;
  close(): Promise<void>;
}

/** ClickHouse at `url`, or embedded chDB in `dataDir` (one data directory per process). */
export async function openClickhouse(opts: { url?: string; dataDir: string }): Promise<Clickhouse> {
  if (opts.url) {
    const client = createClient({ url: opts.url, clickhouse_settings: { async_insert: 0 } });
    return { client, embedded: false, close: () => client.close() };
  }
  const { Session } = await import('chdb');
  const { createChdbConnection } = await import('chdb/connection');
  const path = join(opts.dataDir, 'ch');
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const unlock = lockDir(path, 'ClickHouse');
  // The first session on a path starts the engine with its arguments; the connection below joins
  // it. An idle engine thread keeps three /proc/self/task/<tid>/* descriptors open (per-thread
  // metrics), and by default the engine keeps up to 1,000 idle threads: under load that grew by
  // hundreds of descriptors. With no idle threads kept, finished threads release theirs.
  const engine = new Session(path, { connectionArgs: ['--max_thread_pool_free_size=0', '--memory_worker_period_ms=1000'] });
  const client = createClient({ connection: createChdbConnection({ path }) } as any);
  return { client, embedded: true, async close() { await client.close(); engine.close(); unlock(); } };
}
