// How embedded Postgres starts: shared by its host thread (pglite-host.ts) and the benchmark's floor,
// so that the floor measures PGlite as headwater runs it.
import { PGlite } from '@electric-sql/pglite';

/**
 * PGlite in `dataDir`. New WAL segments are not zero-filled: PGlite wrote 16 MB of zeros on its one
 * thread every ~40k messages, a 100-ms stall for every call waiting (fsync is off in PGlite anyway).
 * `cacheMb` is its shared_buffers (PostgreSQL's default, 128, when unset).
 */
export function startPglite(dataDir: string, cacheMb?: number): Promise<PGlite> {
  const cache = cacheMb === undefined ? [] : ['-c', `shared_buffers=${Math.floor(cacheMb)}MB`];
  return PGlite.create({ dataDir, startParams: [...PGlite.defaultStartParams, '-c', 'wal_init_zero=off', ...cache] });
}
