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
  const { createChdbConnection } = await import('chdb/connection');
  const path = join(opts.dataDir, 'ch');
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const unlock = lockDir(path, 'ClickHouse');
  const client = createClient({ connection: createChdbConnection({ path }) } as any);
  return { client, embedded: true, async close() { await client.close(); unlock(); } };
}
