// The life of a baseline server child (bench/fastify-pg*.ts): listen and print the line the
// harness waits for, stop on SIGTERM/SIGINT without waiting for keep-alive clients, and clean up
// its tables either way.
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';

export interface BaselineLife {
  app: FastifyInstance;
  pool: pg.Pool;
  host: string;
  port: number;
  /** Program name for the error line. */
  name: string;
  /** Appended to the `listening on` line (the harness reads the table names from it). */
  describe: string;
  cleanup(): Promise<void>;
}

export async function live(o: BaselineLife): Promise<void> {
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(1), 10_000);
    timer.unref();
    try {
      o.app.server.closeAllConnections?.();
      await o.app.close();
    } catch { /* closing anyway */ }
    await o.cleanup();
    await o.pool.end().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  try {
    const address = await o.app.listen({ host: o.host, port: o.port });
    process.stdout.write(`listening on ${address} ${o.describe}\n`);
  } catch (err) {
    process.stderr.write(`${o.name}: cannot listen: ${(err as Error).message}\n`);
    await o.cleanup();
    await o.pool.end().catch(() => {});
    process.exit(1);
  }
}
