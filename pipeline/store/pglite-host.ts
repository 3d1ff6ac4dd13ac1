// Worker-thread host for embedded Postgres: PGlite speaking the Postgres wire protocol, so the
// service talks to it with `pg` exactly as it talks to a PostgreSQL server (one code path), and
// PGlite's CPU work runs off the main thread. The service's own pool reaches it over this thread's
// message port (pglite-channel.ts); the socket serves other clients.
import { parentPort, workerData } from 'node:worker_threads';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import type { WireMessage } from './pglite-channel.js';
import { startPglite } from './pglite-start.js';

const { dataDir, socketPath, cacheMb } = workerData as { dataDir: string; socketPath: string; cacheMb?: number };

const db = await startPglite(dataDir, cacheMb);
const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 32 });
await server.start();

// Wire requests in arrival order, one at a time; bytes of a message split across requests wait
// for the rest.
const partial = new Map<number, Buffer>();
type Request = Extract<WireMessage, { type: 'wire' | 'wire-close' }>;
const queue: Request[] = [];
let running = false;

async function drain(): Promise<void> {
  if (running) return;
  running = true;
  try {
    for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
      if (m.type === 'wire-close') { partial.delete(m.conn); continue; }
      let out: Uint8Array;
      try {
        out = await execute(m.conn, m.data);
      } catch (err) {
        // PGlite itself failed (not a query error, which is an ErrorResponse): the connection is lost.
        partial.delete(m.conn);
        parentPort!.postMessage({ type: 'wire-error', conn: m.conn, message: String((err as Error)?.message ?? err) });
        continue;
      }
      // Nothing to answer (a Terminate): pg expects no reply.
      if (out.length > 0) parentPort!.postMessage({ type: 'wire', conn: m.conn, data: out }, [out.buffer as ArrayBuffer]);
    }
  } finally {
    running = false;
  }
}

/** Runs the complete messages of `data` (after what was left of the connection's last request). */
async function execute(conn: number, data: Uint8Array): Promise<Uint8Array> {
  let buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const left = partial.get(conn);
  if (left) buf = Buffer.concat([left, buf]);
  const chunks: Uint8Array[] = [];
  const run = (msg: Uint8Array) => db.runExclusive(() =>
    db.execProtocolRawStream(msg, { syncToFs: false, onRawData: (d: Uint8Array) => { chunks.push(d.slice()); } }));
  let at = 0;
  while (buf.length - at >= 5) {
    // A startup message has no type byte (its first byte is the high byte of its length) and
    // goes alone; the other complete messages go together (PGlite runs them in order).
    if (buf[at] === 0) {
      const len = buf.readInt32BE(at);
      if (buf.length - at < len) break;
      await run(buf.subarray(at, at + len));
      at += len;
      continue;
    }
    let end = at;
    while (buf.length - end >= 5 && buf[end] !== 0) {
      const len = 1 + buf.readInt32BE(end + 1);
      if (buf.length - end < len) break;
      end += len;
    }
    if (end === at) break;
    await run(buf.subarray(at, end));
    at = end;
  }
  if (at < buf.length) partial.set(conn, Buffer.from(buf.subarray(at)));
  else partial.delete(conn);
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(total);
  let p = 0;
  for (const c of chunks) { out.set(c, p); p += c.length; }
  return out;
}

parentPort!.on('message', async (msg: Request | { type: 'close' }) => {
  if (msg.type === 'wire' || msg.type === 'wire-close') { queue.push(msg); void drain(); return; }
  if (msg.type !== 'close') return;
  try {
    await server.stop();
    await db.close();
  } finally {
    parentPort!.postMessage({ type: 'closed' });
  }
});
parentPort!.postMessage({ type: 'ready' });
