// Worker-thread host for embedded Postgres: PGlite speaking the Postgres wire protocol, so the
// service talks to it with `pg` exactly as it talks to a PostgreSQL server (one code path), and
// PGlite's CPU work runs off the main thread. The service's own pool reaches it over this thread's
// message port (pglite-channel.ts); a Unix socket in the data directory serves other clients (an
// operator's psql, tests). Both kinds of connection go through one queue here.
import { createServer, type Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import type { WireMessage } from './pglite-channel.js';
import { startPglite } from './pglite-start.js';

const { dataDir, socketPath, cacheMb, idleTxMs } = workerData as { dataDir: string; socketPath: string; cacheMb?: number; idleTxMs?: number };

const db = await startPglite(dataDir, cacheMb);

// PGlite is one session, shared by the service's connections and the socket's clients. A connection may run its
// requests whenever no other connection has a transaction open on the session: the session is
// owned from a connection's first message until an answer ends with ReadyForQuery "idle", so an
// explicit transaction (or an extended-protocol exchange not yet synced) never sees another
// connection's statement inside it, while autocommit statements of several connections queue here
// back to back (the next one is already waiting when the last one ends: the session does not idle
// for the round trip to the main thread). Requests of one connection run in order; the owner's go
// first. Bytes of a message split across requests wait for the rest.
const partial = new Map<number, Buffer>();
type Request = Extract<WireMessage, { type: 'wire' | 'wire-close' }>;
const queue: Request[] = [];
let running = false;
/** The connection whose transaction is open on the session, if any. */
let owner: number | undefined;

/**
 * Since when the socket client that owns the session has left its transaction idle (0: it does not,
 * or the owner is the service). Once that has lasted `idleTxMs` while other connections' requests
 * wait, its transaction is rolled back and its connection closed (`endIdle`): an operator's psql
 * left in `BEGIN` would otherwise hold ingestion until it is closed. Not while it runs a statement.
 */
let idleSince = 0;
let idleTimer: NodeJS.Timeout | undefined;
/** Socket connections ended for idling: what they still send is dropped. */
const cut = new Set<number>();

/** The next request that may run: the oldest, or the owner's oldest while a transaction is open. */
function next(): Request | undefined {
  const i = owner === undefined ? 0 : queue.findIndex((m) => m.conn === owner);
  return i < 0 || i >= queue.length ? undefined : queue.splice(i, 1)[0];
}

async function drain(): Promise<void> {
  if (running) return;
  running = true;
  try {
    for (let m = next(); m !== undefined; m = next()) {
      if (m.type === 'wire-close') { await closed(m.conn); continue; }
      let out: Uint8Array;
      try {
        out = await execute(m.conn, m.data);
      } catch (err) {
        // PGlite itself failed (not a query error, which is an ErrorResponse): the connection is lost.
        await closed(m.conn);
        if (m.conn < 0) sockets.get(m.conn)?.destroy();
        else parentPort!.postMessage({ type: 'wire-error', conn: m.conn, message: String((err as Error)?.message ?? err) });
        continue;
      }
      // An empty answer (a Terminate, or only part of a message so far) leaves the session as it
      // was, and pg expects no reply.
      if (out.length === 0) continue;
      owner = sessionIdle(out) ? undefined : m.conn;
      idleSince = owner !== undefined && owner < 0 ? Date.now() : 0;
      answer(m.conn, out);
    }
  } finally {
    running = false;
  }
  watchIdle();
}

/** Ends the socket owner's transaction once it idled `idleTxMs` with others waiting, or checks again then. */
function watchIdle(): void {
  clearTimeout(idleTimer);
  idleTimer = undefined;
  if (!idleTxMs || running || idleSince === 0 || owner === undefined || !queue.some((m) => m.conn !== owner)) return;
  const left = idleSince + idleTxMs - Date.now();
  if (left > 0) { idleTimer = setTimeout(watchIdle, left); idleTimer.unref(); return; }
  void endIdle(owner);
}

/**
 * Rolls back the idle socket client's transaction and closes its connection with the error a
 * PostgreSQL server sends for idle_in_transaction_session_timeout (25P03), then runs what waited.
 */
async function endIdle(conn: number): Promise<void> {
  running = true;
  const idled = Date.now() - idleSince;
  try {
    cut.add(conn);
    owner = undefined;
    idleSince = 0;
    partial.delete(conn);
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i]!.conn === conn) queue.splice(i, 1);
    await db.exec('ROLLBACK').catch(() => {});
    sockets.get(conn)?.end(fatal('25P03', `terminating connection due to idle-in-transaction timeout: the transaction idled ${idled} ms while the service waited for the store (HEADWATER_EMBEDDED_IDLE_TX_MS)`));
    parentPort!.postMessage({ type: 'idle-ended', ms: idled });
  } finally {
    running = false;
  }
  void drain();
}

/** A FATAL ErrorResponse message (the Postgres wire protocol). */
function fatal(code: string, message: string): Buffer {
  const body = Buffer.concat([
    Buffer.from(`SFATAL\0VFATAL\0C${code}\0M`), Buffer.from(message, 'utf8'), Buffer.from('\0\0'),
  ]);
  const head = Buffer.alloc(5);
  head[0] = 0x45; // E
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** A connection went away: what it left open on the session is rolled back. */
async function closed(conn: number): Promise<void> {
  partial.delete(conn);
  if (owner !== conn) return;
  owner = undefined;
  // exec takes the session's lock itself (runExclusive around it would wait for itself).
  await db.exec('ROLLBACK').catch(() => {});
}

/**
 * Whether the session is free after an answer: true when its last ReadyForQuery says idle, false
 * when it says a transaction is open or failed, or when the answer has none (an exchange not yet
 * synced). Message headers only: type byte, then a length that counts itself.
 */
function sessionIdle(out: Uint8Array): boolean {
  let idle = false;
  const v = new DataView(out.buffer, out.byteOffset, out.byteLength);
  for (let at = 0; at + 5 <= out.length; at += 1 + Math.max(4, v.getInt32(at + 1))) {
    if (out[at] === 0x5a /* Z */ && at + 5 < out.length) idle = out[at + 5] === 0x49; /* I */
  }
  return idle;
}

/**
 * `m` with its statement and portal names made the connection's own, or undefined when it names
 * none (the service's queries are unnamed): the session is shared, so two connections preparing
 * "next_due" would otherwise collide. Parse and Execute start with a name, Bind with a portal and a
 * statement, Describe and Close with a kind byte and then a name.
 */
function scoped(conn: number, m: Buffer): Buffer | undefined {
  let at: number;
  let fields: number;
  switch (m[0]) {
    case 0x50: case 0x45: at = 5; fields = 1; break; // P, E
    case 0x42: at = 5; fields = 2; break; // B
    case 0x44: case 0x43: at = 6; fields = 1; break; // D, C
    default: return undefined;
  }
  // Unnamed (every message the service sends) is answered before anything is allocated.
  if (m[at] === 0 && (fields === 1 || m[at + 1] === 0)) return undefined;
  const parts: Buffer[] = [m.subarray(0, at)];
  let named = false;
  for (let i = 0; i < fields; i++) {
    const end = m.indexOf(0, at);
    if (end < 0) return undefined; // malformed: PGlite answers it as it is
    if (end > at) { named = true; parts.push(Buffer.from(`c${conn}.`)); }
    parts.push(m.subarray(at, end + 1));
    at = end + 1;
  }
  if (!named) return undefined;
  parts.push(m.subarray(at));
  const out = Buffer.concat(parts);
  out.writeInt32BE(out.length - 1, 1);
  return out;
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
    // Rewritten messages, once one names a statement or portal (their parts, in order).
    let parts: Buffer[] | undefined;
    while (buf.length - end >= 5 && buf[end] !== 0) {
      const len = 1 + buf.readInt32BE(end + 1);
      if (buf.length - end < len) break;
      const named = scoped(conn, buf.subarray(end, end + len));
      if (named) (parts ??= [buf.subarray(at, end)]).push(named);
      else parts?.push(buf.subarray(end, end + len));
      end += len;
    }
    if (end === at) break;
    await run(parts ? Buffer.concat(parts) : buf.subarray(at, end));
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

/** Sends an answer to its connection: the channel's over the port, a socket client's on its socket. */
function answer(conn: number, out: Uint8Array): void {
  if (conn >= 0) { parentPort!.postMessage({ type: 'wire', conn, data: out }, [out.buffer as ArrayBuffer]); return; }
  const s = sockets.get(conn);
  if (s && !s.destroyed) s.write(out);
}

// Socket clients get negative connection numbers (the channel's count up from 1).
const sockets = new Map<number, Socket>();
let nextSocket = -1;
const MAX_SOCKETS = 32;
/** Codes of the startup-phase requests a server answers itself (no session involved). */
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

const server = createServer((s) => {
  if (sockets.size >= MAX_SOCKETS) { s.destroy(); return; }
  const conn = nextSocket--;
  sockets.set(conn, s);
  let started = false;
  let head = Buffer.alloc(0);
  s.on('data', (d: Buffer) => {
    if (cut.has(conn)) return;
    if (started) { queue.push({ type: 'wire', conn, data: d }); void drain(); return; }
    // Before the startup message: encryption requests are declined ('N': go on in the clear; the
    // socket is its owner's alone), a cancel request is not supported (the connection is closed).
    head = Buffer.concat([head, d]);
    while (!started && head.length >= 8) {
      const len = head.readInt32BE(0);
      const code = head.readInt32BE(4);
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) { s.write('N'); head = head.subarray(len); continue; }
      if (code === CANCEL_REQUEST) { s.destroy(); return; }
      started = true;
      queue.push({ type: 'wire', conn, data: head });
      void drain();
    }
  });
  s.on('error', () => {});
  s.on('close', () => {
    sockets.delete(conn);
    cut.delete(conn);
    queue.push({ type: 'wire-close', conn });
    void drain();
  });
});
await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(socketPath, () => { server.off('error', reject); resolve(); }); });

parentPort!.on('message', async (msg: Request | { type: 'close' }) => {
  if (msg.type === 'wire' || msg.type === 'wire-close') { queue.push(msg); void drain(); return; }
  if (msg.type !== 'close') return;
  try {
    await new Promise<void>((resolve) => { server.close(() => resolve()); for (const s of sockets.values()) s.destroy(); });
    await db.close();
  } finally {
    parentPort!.postMessage({ type: 'closed' });
  }
});
parentPort!.postMessage({ type: 'ready' });
