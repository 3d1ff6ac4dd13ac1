// The PGlite thread of bench/floor.ts: runs the statements it is sent, one at a time, in order.
import { parentPort, workerData } from 'node:worker_threads';
import { startPglite } from '../pipeline/store/pglite-start.js';

// As headwater's host thread starts it.
const db = await startPglite((workerData as { dataDir: string }).dataDir);
let chain = Promise.resolve();
parentPort!.on('message', (m: { id: number; sql: string; params: unknown[]; multi?: boolean }) => {
  chain = chain.then(async () => {
    try {
      // Without parameters several statements may come at once (the tables): exec takes them, and
      // `multi` answers each one's rows.
      const rows = m.params.length ? (await db.query<Record<string, unknown>>(m.sql, m.params)).rows
        : m.multi ? (await db.exec(m.sql)).map((r) => r.rows) : ((await db.exec(m.sql)).at(-1)?.rows ?? []);
      parentPort!.postMessage({ id: m.id, rows });
    } catch (err) {
      parentPort!.postMessage({ id: m.id, error: String((err as Error)?.message ?? err) });
    }
  });
});
