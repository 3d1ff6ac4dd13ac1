// The Piscina threads of `bench/floor.ts --workers piscina`: each batch's statement runs on a thread's
// own pg pool, as headwater's ingestion threads run theirs (workers/ingest-task.ts), so the floor
// pays the hop headwater's shape has (main thread -> worker thread -> Postgres -> back).
import { workerData } from 'piscina';
import pg from 'pg';

const { url, connections } = workerData as { url: string; connections: number };
const pool = new pg.Pool({ connectionString: url, max: connections });

export default async function run(task: { sql: string; params: unknown[] }): Promise<Array<Record<string, unknown>>> {
  return (await pool.query(task.sql, task.params)).rows;
}
