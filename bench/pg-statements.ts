// Postgres's side of a scenario, statement by statement, when the server has pg_stat_statements
// loaded (`shared_preload_libraries = 'pg_stat_statements'`, a restart): the counters are reset
// before the measured run and read after it, for the databases the bench's processes use (the view
// is read from the database DATABASE_URL names, where the extension must exist). Times are wall
// time inside the server (lock waits included), not CPU. Without them the bench says why once and
// goes on.
import pg from 'pg';

export interface StatementRow { calls: number; totalMs: number; rows: number; query: string }

export interface Statements {
  /** Statements inside functions count too (pg_stat_statements.track = all) for this database. */
  trackAll(database: string): Promise<void>;
  reset(): Promise<void>;
  /** The `n` statements that took longest in `databases`, longest first. */
  top(databases: string[], n: number): Promise<StatementRow[]>;
  close(): Promise<void>;
}

/** Undefined (with the reason) when the server at `url` cannot itemize statements. */
export async function openStatements(url: string): Promise<{ statements?: Statements; reason?: string }> {
  const c = new pg.Client({ connectionString: url });
  try {
    await c.connect();
    // The database given to the bench is not changed: the extension must be there already.
    const ext = await c.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'`);
    if (ext.rowCount === 0) {
      await c.end();
      return { reason: `the pg_stat_statements extension is not created in ${c.database} (CREATE EXTENSION pg_stat_statements, with the library loaded)` };
    }
    await c.query('SELECT 1 FROM pg_stat_statements LIMIT 1');
  } catch (err) {
    await c.end().catch(() => {});
    return { reason: `pg_stat_statements unavailable (${(err as Error).message.split('\n')[0]}): load it with shared_preload_libraries` };
  }
  return {
    statements: {
      async trackAll(database) {
        // An identifier from the bench's own naming; quoted all the same.
        await c.query(`ALTER DATABASE "${database.replace(/"/g, '""')}" SET pg_stat_statements.track = 'all'`);
      },
      async reset() { await c.query('SELECT pg_stat_statements_reset()'); },
      async top(databases, n) {
        const r = await c.query<{ calls: string; total_ms: number; rows: string; query: string }>(
          `SELECT s.calls, s.total_exec_time AS total_ms, s.rows, s.query FROM pg_stat_statements s
           JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = ANY($1)
           ORDER BY s.total_exec_time DESC LIMIT $2`, [databases, n]);
        return r.rows.map((x) => ({ calls: Number(x.calls), totalMs: x.total_ms, rows: Number(x.rows), query: x.query.replace(/\s+/g, ' ').trim() }));
      },
      close: () => c.end(),
    },
  };
}

/** Lines for the log: total ms, calls, microseconds per ingestion call answered 2xx, rows, the statement's start. */
export function statementLines(rows: StatementRow[], callsOk: number | undefined): string[] {
  if (rows.length === 0) return [];
  const head = '    postgres statements in the measured run (pg_stat_statements; wall time in the server, lock waits included):';
  const cols = `      ${'total ms'.padStart(9)} ${'calls'.padStart(7)} ${'us/2xx'.padStart(8)} ${'rows'.padStart(8)}  statement (us/2xx: total per ingestion call answered 2xx)`;
  return [head, cols, ...rows.map((r) => `      ${r.totalMs.toFixed(0).padStart(9)} ${String(r.calls).padStart(7)} ${
    (callsOk ? ((r.totalMs * 1000) / callsOk).toFixed(1) : '-').padStart(8)} ${String(r.rows).padStart(8)}  ${r.query.slice(0, 110)}`)];
}
