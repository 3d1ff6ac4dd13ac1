// The floor of the benchmark: the least any service can do that keeps the ingestion contract for a
// track call, on the same front end and the same stores as headwater. A bare uWebSockets.js server
// parses the JSON, gathers the calls that arrived while the previous batch was written, and stores
// each batch with one statement: every messageId with the event it answers (jsonb), `ON CONFLICT DO
// NOTHING` (a replay reads its original with a second statement). It answers once Postgres
// committed: 201 with the event, or 200 with the original. No auth, no validation beyond the
// JSON, no profiles, no identity, no governance, no segments, no stream, no ClickHouse: every
// headwater call does all of this and more, so this server's rate bounds headwater's from above in
// the same run.
//   --store pglite: embedded PGlite in a worker thread, one statement in flight (one session)
//   --store pg: DATABASE_URL, up to --inflight statements at once (default 2: the best of 1, 2, 4, 8, 16 here) on their own connections
// It creates its own table with a random suffix (pg: dropped when stopped).
//
//   node dist/bench/floor.js --store pglite|pg [--inflight N] [--port P] [--host H]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { App, us_listen_socket_close, us_socket_local_port, type HttpResponse, type us_listen_socket, type us_socket } from 'uws-pack';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(name);
  return i !== -1 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : def;
}

const host = arg('--host', '127.0.0.1');
const port = Number(arg('--port', '0'));
const store = arg('--store', 'pglite');
if (store !== 'pglite' && store !== 'pg') throw new Error('--store is pglite or pg');
const inflight = store === 'pglite' ? 1 : Number(arg('--inflight', '2'));
const table = `floor_messages_${randomBytes(4).toString('hex')}`;
const prefix = randomBytes(4).toString('hex');
let seq = 0;

const CREATE = `CREATE TABLE ${table} (message_id text PRIMARY KEY, result jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`;
// $1: [{m, r}] -> the messageIds inserted now; $1 again: the originals of the others.
const INSERT = `WITH i AS (INSERT INTO ${table} (message_id, result)
  SELECT x.m, x.r FROM jsonb_to_recordset($1::jsonb) AS x(m text, r jsonb) ON CONFLICT DO NOTHING RETURNING message_id)
  SELECT coalesce(array_agg(message_id), '{}') AS ids FROM i`;
const ORIGINALS = `SELECT message_id, result FROM ${table} WHERE message_id = ANY($1::text[])`;

interface Store { query(sql: string, params: unknown[]): Promise<Array<Record<string, any>>>; close(): Promise<void> }

async function openStore(): Promise<Store> {
  if (store === 'pg') {
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test', max: inflight });
    await pool.query(CREATE);
    return {
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      close: async () => { await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {}); await pool.end(); },
    };
  }
  // PGlite runs on the calling thread: a worker thread keeps it off the front end's, as headwater does.
  const dir = mkdtempSync(join(tmpdir(), 'floor-pglite-'));
  const worker = new Worker(new URL('./floor-pglite.js', import.meta.url), { workerData: { dataDir: dir } });
  const waiting = new Map<number, { resolve: (rows: Array<Record<string, any>>) => void; reject: (e: Error) => void }>();
  let next = 0;
  worker.on('message', (m: { id: number; rows?: Array<Record<string, any>>; error?: string }) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error !== undefined) w?.reject(new Error(m.error)); else w?.resolve(m.rows!);
  });
  const query = (sql: string, params: unknown[]) => new Promise<Array<Record<string, any>>>((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, sql, params });
  });
  await query(CREATE, []);
  return { query, close: async () => { await worker.terminate(); rmSync(dir, { recursive: true, force: true }); } };
}

interface Pending { res: HttpResponse; state: { aborted: boolean }; m: string; event: Record<string, unknown> }

function answer(p: Pending, status: string, body: string) {
  if (p.state.aborted) return;
  p.res.cork(() => { p.res.writeStatus(status).writeHeader('content-type', 'application/json').end(body); });
}

const db = await openStore();
let queue: Pending[] = [];
let running = 0;

async function write(batch: Pending[]) {
  // A batch must not repeat a key: a repeat waits for the next batch (and is then a replay).
  const seen = new Set<string>();
  const now: Pending[] = [];
  for (const p of batch) { if (seen.has(p.m)) queue.push(p); else { seen.add(p.m); now.push(p); } }
  try {
    const [row] = await db.query(INSERT, [JSON.stringify(now.map((p) => ({ m: p.m, r: p.event })))]);
    const inserted = new Set<string>(row!.ids);
    const replays = now.filter((p) => !inserted.has(p.m));
    const originals = new Map<string, unknown>();
    if (replays.length) for (const r of await db.query(ORIGINALS, [replays.map((p) => p.m)])) originals.set(r.message_id, r.result);
    for (const p of now) {
      if (inserted.has(p.m)) answer(p, '201 Created', JSON.stringify({ data: p.event }));
      else answer(p, '200 OK', JSON.stringify({ data: originals.get(p.m) }));
    }
  } catch (err) {
    for (const p of now) answer(p, '503 Service Unavailable', JSON.stringify({ error: { code: 'dependency_unavailable', message: String(err) } }));
  }
}

function pump() {
  while (running < inflight && queue.length > 0) {
    const batch = queue.length > 500 ? queue.splice(0, 500) : queue;
    if (batch === queue) queue = [];
    running++;
    void write(batch).finally(() => { running--; pump(); });
  }
}

function onPost(res: HttpResponse) {
  const state = { aborted: false };
  let parts: Buffer[] | undefined;
  res.onAborted(() => { state.aborted = true; });
  res.onData((chunk, isLast) => {
    const piece = Buffer.from(chunk.slice(0));
    if (!isLast) { (parts ??= []).push(piece); return; }
    if (state.aborted) return;
    let body: any;
    try { body = JSON.parse((parts ? Buffer.concat([...parts, piece]) : piece).toString('utf8')); } catch { body = undefined; }
    const d = body?.data;
    if (typeof d?.messageId !== 'string' || typeof d.event !== 'string') {
      res.cork(() => { res.writeStatus('422 Unprocessable Entity').end('{"error":{"code":"validation_failed","message":"not a track call"}}'); });
      return;
    }
    const at = new Date().toISOString();
    const event = { id: `evt_${prefix}${(++seq).toString(36)}`, messageId: d.messageId, event: d.event, identifiers: d.identifiers, properties: d.properties ?? {}, timestamp: d.timestamp ?? at, receivedAt: at };
    queue.push({ res, state, m: d.messageId, event });
    pump();
  });
}

let listenSocket: us_listen_socket | undefined;
App()
  .post('/*', onPost)
  .get('/health/live', (res) => { res.cork(() => { res.writeStatus('200 OK').end('{"data":{"status":"ok"}}'); }); })
  .listen(host, port, (token) => {
    if (!token) { process.stderr.write(`floor: cannot listen on ${host}:${port}\n`); process.exit(1); }
    listenSocket = token;
    process.stdout.write(`listening on http://${host}:${us_socket_local_port(token as unknown as us_socket)}\n`);
  });

const stop = () => {
  if (listenSocket) us_listen_socket_close(listenSocket);
  listenSocket = undefined;
  void db.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
