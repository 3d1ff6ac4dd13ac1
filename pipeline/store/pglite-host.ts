// Worker-thread host for embedded Postgres: PGlite behind a Postgres wire-protocol socket, so the
// service talks to it with `pg` exactly as it talks to a PostgreSQL server (one code path), and
// PGlite's CPU work runs off the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

const { dataDir, socketPath } = workerData as { dataDir: string; socketPath: string };

const db = await PGlite.create({ dataDir });
const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 32 });
await server.start();
parentPort!.postMessage({ type: 'ready' });

parentPort!.on('message', async (msg: { type: string }) => {
  if (msg.type !== 'close') return;
  try {
    await server.stop();
    await db.close();
  } finally {
    parentPort!.postMessage({ type: 'closed' });
  }
});
