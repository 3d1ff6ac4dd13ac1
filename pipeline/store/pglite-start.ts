// How embedded Postgres starts: shared by its host thread (pglite-host.ts) and the benchmark's floor,
// so that the floor measures PGlite as headwater runs it.
import { PGlite } from '@electric-sql/pglite';

/**
 * PGlite in `dataDir`. New WAL segments are not zero-filled: PGlite wrote 16 MB of zeros on its one
 * thread every ~40k messages, a 100-ms stall for every call waiting (fsync is off in PGlite anyway).
 */
export function startPglite(dataDir: string): Promise<PGlite> {
  return PGlite.create({ dataDir, startParams: [...PGlite.defaultStartParams, '-c', 'wal_init_zero=off'] });
}
