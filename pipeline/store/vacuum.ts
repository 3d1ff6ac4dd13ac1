// Embedded Postgres (PGlite) runs no autovacuum: without it, every update leaves a dead row version
// and an index entry behind for good. The partial indexes of active work (due executions, pending
// deliveries) then hold an entry for every row that was ever active, and the claims and landing
// reads that scan them slow down as the store ages (a due-executions probe visited 385 heap pages
// for 0 live rows after 5,000 completed executions). This loop does what autovacuum would, with its
// default thresholds: a table is vacuumed once its dead rows pass 50 + 20 % of its live rows, and
// analyzed once 50 + 10 % of it changed, on a smaller sample than ANALYZE takes by default. A
// PostgreSQL server has autovacuum, so it runs only embedded.
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';

export interface VacuumOptions {
  pool: pg.Pool;
  log: Logger;
  /** How often the statistics are read (two cheap statements); default 15 s. */
  intervalMs?: number;
}

export interface Vacuum { close(): Promise<void> }

/** Postgres's default is 100 (a sample of 300 x target rows). */
const STATISTICS_TARGET = 10;

interface TableStats { relname: string; live: number; dead: number }

export function startVacuum(o: VacuumOptions): Vacuum {
  const intervalMs = o.intervalMs ?? 15_000;
  let closed = false;
  let running: Promise<void> = Promise.resolve();

  const round = async () => {
    // PGlite flushes its table statistics only when asked; the read after this sees them.
    await o.pool.query('SELECT pg_stat_force_next_flush()');
    const r = await o.pool.query<TableStats>(
      `SELECT relname, n_live_tup::float8 AS live, n_dead_tup::float8 AS dead
       FROM pg_stat_user_tables WHERE schemaname = 'public'
         AND (n_dead_tup > 50 + 0.2 * n_live_tup OR n_mod_since_analyze > 50 + 0.1 * n_live_tup)`);
    for (const t of r.rows) {
      if (closed) return;
      const vacuum = t.dead > 50 + 0.2 * t.live;
      const began = performance.now();
      // The name comes from the catalog; quoted as an identifier all the same.
      const table = `"${t.relname.replace(/"/g, '""')}"`;
      // VACUUM runs alone (not in a multi-statement query, which is a transaction block).
      if (vacuum) await o.pool.query(`VACUUM ${table}`);
      // A 3,000-row sample instead of 30,000: this runs on the store's one thread, which every call
      // waits for, and the plans here need only rough figures (messages at 100k rows: 25-33 ms
      // instead of 280-306 ms, which showed as the p99 of batch loads).
      await o.pool.query(`SET default_statistics_target = ${STATISTICS_TARGET}; ANALYZE ${table}; RESET default_statistics_target`);
      o.log.debug('embedded store maintenance', { table: t.relname, vacuum, dead: t.dead, live: t.live, ms: Math.round(performance.now() - began) });
    }
  };

  const timer = setInterval(() => {
    running = running.then(round).catch((err) => { if (!closed) o.log.warn('embedded store maintenance failed', { err: String(err) }); });
  }, intervalMs);
  timer.unref();

  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
    },
  };
}
