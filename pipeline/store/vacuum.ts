// Embedded Postgres (PGlite) runs no autovacuum: without it, every update leaves a dead row version
// and an index entry behind for good. The partial indexes of active work (due executions, pending
// deliveries) then hold an entry for every row that was ever active, and the claims and landing
// reads that scan them slow down as the store ages (a due-executions probe visited 385 heap pages
// for 0 live rows after 5,000 completed executions). This loop does what autovacuum would, with its
// default thresholds: a table is vacuumed once its dead rows pass 50 + 20 % of its live rows, and
// analyzed once 50 + 10 % of it changed, on a smaller sample than ANALYZE takes by default. A
// PostgreSQL server has autovacuum, so it runs only embedded.
// It also does autovacuum's other duty, the one that guards data rather than speed: freezing. A
// transaction ID is 32 bits; a table none of whose rows were ever frozen (insert-only tables such as
// the stored answers are never vacuumed for dead rows, and catalogs not at all) holds row versions
// that, 2^31 transactions later, read as written in the future and vanish. A server stops accepting
// writes before that; PGlite runs Postgres as a single-user backend, where that stop is not enforced.
// So, as autovacuum does, a table whose oldest unfrozen transaction ID (or multixact) is older than
// autovacuum_freeze_max_age (200 million; autovacuum_multixact_freeze_max_age, 400 million) is
// vacuumed with FREEZE, catalogs included. That pass holds the store for as long as it reads the
// table's pages not frozen yet, so it is logged at `info` with its duration.
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';

export interface VacuumOptions {
  pool: pg.Pool;
  log: Logger;
  /** How often the statistics are read (two cheap statements); default 15 s. */
  intervalMs?: number;
  /** Transaction-ID age past which a table is frozen; default the store's autovacuum_freeze_max_age. */
  freezeMaxAge?: number;
  /** The same for multixacts; default the store's autovacuum_multixact_freeze_max_age. */
  multixactFreezeMaxAge?: number;
}

export interface Vacuum { close(): Promise<void> }

/** Postgres's default is 100 (a sample of 300 x target rows). */
const STATISTICS_TARGET = 10;

interface TableStats { relname: string; live: number; dead: number }

export function startVacuum(o: VacuumOptions): Vacuum {
  const intervalMs = o.intervalMs ?? 15_000;
  let closed = false;
  let running: Promise<void> = Promise.resolve();

  // The ages past which tables are frozen: the options', else the store's autovacuum settings.
  const ages = [o.freezeMaxAge ?? null, o.multixactFreezeMaxAge ?? null];
  const XID_LIMIT = `COALESCE($1::int, current_setting('autovacuum_freeze_max_age')::int)`;
  const MXID_LIMIT = `COALESCE($2::int, current_setting('autovacuum_multixact_freeze_max_age')::int)`;

  /** Freezes the tables (catalogs included) whose oldest unfrozen IDs passed the limits, if any did. */
  const freeze = async () => {
    // The database's oldest IDs first (one row): the tables are listed only when one is past a limit.
    const db = await o.pool.query<{ old: boolean }>(
      `SELECT age(datfrozenxid) > ${XID_LIMIT} OR mxid_age(datminmxid) > ${MXID_LIMIT} AS old FROM pg_database WHERE datname = current_database()`,
      ages);
    if (!db.rows[0]?.old) return;
    const r = await o.pool.query<{ name: string; age: string }>(
      `SELECT c.oid::regclass::text AS name, greatest(age(c.relfrozenxid), age(t.relfrozenxid))::text AS age
       FROM pg_class c LEFT JOIN pg_class t ON t.oid = c.reltoastrelid
       WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
         AND (greatest(age(c.relfrozenxid), age(t.relfrozenxid)) > ${XID_LIMIT} OR greatest(mxid_age(c.relminmxid), mxid_age(t.relminmxid)) > ${MXID_LIMIT})
       ORDER BY greatest(age(c.relfrozenxid), age(t.relfrozenxid)) DESC`, ages);
    for (const t of r.rows) {
      if (closed) return;
      const began = performance.now();
      // regclass output is the name quoted (and schema-qualified) as SQL needs it. One table that
      // cannot be frozen now (dropped meanwhile, say) leaves the others to go on.
      try {
        await o.pool.query(`VACUUM (FREEZE) ${t.name}`);
        o.log.info('embedded store: table frozen against transaction ID wraparound', { table: t.name, age: Number(t.age), ms: Math.round(performance.now() - began) });
      } catch (err) {
        o.log.warn('embedded store: freezing a table failed', { table: t.name, err: String(err) });
      }
    }
  };

  const round = async () => {
    // Freezing failing (the store away) does not keep the dead-row rule below from its turn.
    await freeze().catch((err) => { if (!closed) o.log.warn('embedded store: the wraparound check failed', { err: String(err) }); });
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
