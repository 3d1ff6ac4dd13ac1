// The floor of the benchmark: the least any service can do that keeps the ingestion contract for a
// track or identify call, on the same front end and the same stores as headwater. A bare uWebSockets.js server
// parses the JSON, gathers the calls that arrived while the previous batch was written, and stores
// each batch with one statement: every messageId with the event it answers (jsonb), `ON CONFLICT DO
// NOTHING` (a replay reads its original with a second statement). It answers once Postgres
// committed: 201 with the event, or 200 with the original. An identify call (POST .../identify, one
// identifier, as the bench sends) claims its identifier for a new profile with its traits in one
// statement, or merges the traits into the identifier's profile; answered 200 with the profile.
// With --clickhouse chdb, each new event then lands in an embedded ClickHouse (chDB) events table
// after the answer, in few large inserts, as headwater's do (floor-clickhouse.ts).
// No auth, no validation beyond the JSON, no identity resolution beyond one identifier, no
// governance, no segments (and no stream, but with --stream): every headwater call does all of
// this and more, so this server's rate bounds headwater's from above in the same run.
// POST /v1/batch: each call joins the same queue (with the stream: one submit per request, as
// headwater's front end does), a track call also claims its first identifier for a new profile (as
// the Fastify + pg batch baseline upserts profiles), and the request is answered 200 with the
// calls' results once all are stored.
//   --store pglite: embedded PGlite in a worker thread; with two statements in flight (the default)
//     the next waits on that thread, so PGlite never waits for the front end (one in flight measured
//     0.18-0.21x raw, two 0.22x)
//   --store pg: DATABASE_URL, up to --inflight statements at once (default 2: the best of 1, 2, 4, 8, 16 here) on their own connections
//   --stream nats (with --store pg): each call crosses headwater's own JetStream transport
//     (pipeline/stream, NATS_URL, streams of its own) from the front end to a consumer in the same
//     process that stores the batches it is handed, as headwater's NATS mode does; no Piscina.
//   --workers piscina (with --store pg): each batch's statements run on a Piscina thread
//     (floor-worker.ts), --inflight threads with one batch each, as headwater's ingestion threads
//     run theirs: the floor of headwater's shape, which puts that hop on every batch.
// It creates its own tables with a random suffix (pg: dropped when stopped) and, with the stream,
// its own streams (deleted when stopped).
//
//   --segments bench: the org has the bench's 50 segments (floor-segments.ts).
//   node dist/bench/floor.js --store pglite|pg [--stream nats] [--workers piscina|none] [--clickhouse chdb|none] [--segments bench] [--inflight N] [--port P] [--host H]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { Piscina } from 'piscina';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createLogger } from '../lib/log.js';
import { createJetStreams, deleteStreams, streamNames, type IngestStream } from '../pipeline/stream/mod.js';
import type { CallResult, EventRecord, IngestCall } from '../pipeline/types.js';
import { App, us_listen_socket_close, us_socket_local_port, type HttpRequest, type HttpResponse, type us_listen_socket, type us_socket } from 'uws-pack';
import { arg } from './args.js';
import { openFloorLanding, type FloorLanding } from './floor-clickhouse.js';
import { floorSegments, poolSessions, segmentDrop, segmentTables, type SegmentSession } from './floor-segments.js';

const host = arg('--host', '127.0.0.1');
const port = Number(arg('--port', '0'));
const store = arg('--store', 'pglite');
if (store !== 'pglite' && store !== 'pg') throw new Error('--store is pglite or pg');
const viaNats = arg('--stream', 'none') === 'nats';
if (viaNats && store !== 'pg') throw new Error('--stream nats goes with --store pg');
const inflight = Number(arg('--inflight', '2'));
const workers = arg('--workers', 'none');
if (workers !== 'piscina' && workers !== 'none') throw new Error('--workers is piscina or none');
if (workers === 'piscina' && store !== 'pg') throw new Error('--workers piscina goes with --store pg');
const clickhouse = arg('--clickhouse', 'none');
if (clickhouse !== 'chdb' && clickhouse !== 'none') throw new Error('--clickhouse is chdb or none');
// --segments bench: the org has the bench's 50 segments, decided on every tracked event (floor-segments.ts).
const withSegments = arg('--segments', 'none') === 'bench';
if (withSegments && clickhouse === 'chdb') throw new Error('--segments bench lands nothing in ClickHouse: leave out --clickhouse');
if (withSegments && workers === 'piscina') throw new Error('--segments bench runs its transactions on the main thread: leave out --workers');
const table = `floor_messages_${randomBytes(4).toString('hex')}`;
const prefix = randomBytes(4).toString('hex');
let seq = 0;

// What the floor stores is what the contract makes any multi-tenant service store, in the least
// costly way: messageIds and identifiers keyed within their org and app, profiles listable per org,
// and the two indexes the contract's reads need from what ingestion writes, as headwater has them:
// a profile's identifiers (a profile read shows them, a merge moves them) and the stored answers
// naming a profile (an erasure deletes them). Its one org and app ($2, $3) have ids as long as
// headwater's, so the keys cost what headwater's do.
const ORG = `org_${randomBytes(13).toString('hex').slice(0, 26)}`;
const APP = `app_${randomBytes(13).toString('hex').slice(0, 26)}`;
const CREATE = `CREATE TABLE ${table} (org_id text NOT NULL, app_id text NOT NULL, message_id text NOT NULL, result jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (org_id, app_id, message_id));
  CREATE INDEX ON ${table} (org_id, (result->>'profileId'));
  CREATE TABLE ${table}_ids (org_id text NOT NULL, app_id text NOT NULL, kind text NOT NULL, value text NOT NULL, profile_id text NOT NULL,
    PRIMARY KEY (org_id, app_id, kind, value));
  CREATE INDEX ON ${table}_ids (profile_id);
  CREATE TABLE ${table}_profiles (id text PRIMARY KEY, org_id text NOT NULL, traits jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
  CREATE INDEX ON ${table}_profiles (org_id, id)`;
// $1: [{k, v, p, t}] -> the profiles created now (their identifiers were new).
const IDENTIFY = `WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(k text, v text, p text, t jsonb)),
  ids AS (INSERT INTO ${table}_ids (org_id, app_id, kind, value, profile_id) SELECT $2, $3, k, v, p FROM x ON CONFLICT DO NOTHING RETURNING kind, value),
  np AS (INSERT INTO ${table}_profiles (id, org_id, traits) SELECT x.p, $2, x.t FROM x JOIN ids ON ids.kind = x.k AND ids.value = x.v RETURNING id)
  SELECT coalesce(array_agg(id), '{}') AS ids FROM np`;
// Lookups by key go through a lateral subquery on the whole key (OFFSET 0 keeps it apart): the
// tables grow faster than anything analyzes them, and on a planner's guess of a few rows a join or
// an = ANY on the last key column read every row of the org (replays fell to ~100 requests/s).
// $1 as above, for the identifiers that had a profile already: their traits merged in.
const MERGE = `UPDATE ${table}_profiles pr SET traits = pr.traits || x.t, updated_at = now()
  FROM jsonb_to_recordset($1::jsonb) AS x(k text, v text, t jsonb)
  CROSS JOIN LATERAL (SELECT i.profile_id FROM ${table}_ids i
    WHERE i.org_id = $2 AND i.app_id = $3 AND i.kind = x.k AND i.value = x.v OFFSET 0) i
  WHERE pr.id = i.profile_id RETURNING pr.id, pr.traits, x.k, x.v`;
// $1: [{m, r}] -> the messageIds inserted now; $1 again: the originals of the others.
const INSERT = `WITH i AS (INSERT INTO ${table} (org_id, app_id, message_id, result)
  SELECT $2, $3, x.m, x.r FROM jsonb_to_recordset($1::jsonb) AS x(m text, r jsonb) ON CONFLICT DO NOTHING RETURNING message_id)
  SELECT coalesce(array_agg(message_id), '{}') AS ids FROM i`;
// A batch's track calls also claim their identifier for a new profile (as the Fastify + pg batch
// baseline upserts the batch's profiles): $1: [{m, r, k, v, p}] -> the messageIds inserted now.
const INSERT_CLAIM = `WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(m text, r jsonb, k text, v text, p text)),
  i AS (INSERT INTO ${table} (org_id, app_id, message_id, result) SELECT $2, $3, m, r FROM x ON CONFLICT DO NOTHING RETURNING message_id),
  ids AS (INSERT INTO ${table}_ids (org_id, app_id, kind, value, profile_id) SELECT DISTINCT ON (k, v) $2, $3, k, v, p FROM x ON CONFLICT DO NOTHING RETURNING profile_id),
  np AS (INSERT INTO ${table}_profiles (id, org_id, traits) SELECT profile_id, $2, '{}'::jsonb FROM ids)
  SELECT coalesce(array_agg(message_id), '{}') AS ids FROM i`;
const ORIGINALS = `SELECT o.message_id, o.result FROM unnest($1::text[]) AS x(m)
  CROSS JOIN LATERAL (SELECT message_id, result FROM ${table} WHERE org_id = $2 AND app_id = $3 AND message_id = x.m OFFSET 0) o`;

interface Store { session(): Promise<SegmentSession>; query(sql: string, params: unknown[]): Promise<Array<Record<string, any>>>; close(): Promise<void> }

async function openStore(): Promise<Store> {
  if (store === 'pg') {
    const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
    const pool = new pg.Pool({ connectionString: url, max: inflight });
    await pool.query(CREATE);
    if (withSegments) await pool.query(segmentTables(table));
    const threads = workers === 'piscina'
      ? new Piscina({ filename: new URL('./floor-worker.js', import.meta.url).href, minThreads: inflight, maxThreads: inflight, workerData: { url, connections: 2 } })
      : undefined;
    return {
      session: poolSessions(pool),
      query: threads ? (sql, params) => threads.run({ sql, params }) as Promise<Array<Record<string, any>>> : async (sql, params) => (await pool.query(sql, params)).rows,
      close: async () => {
        await threads?.destroy();
        await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_ids, ${table}_profiles${withSegments ? segmentDrop(table) : ''}`).catch(() => {});
        await pool.end();
      },
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
  const send = (sql: string, params: unknown[], multi = false) => new Promise<any>((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, sql, params, multi });
  });
  const query = (sql: string, params: unknown[]) => send(sql, params) as Promise<Array<Record<string, any>>>;
  await query(CREATE, []);
  if (withSegments) await query(segmentTables(table), []);
  // One session: a transaction holds it (others wait), as headwater's host thread runs one
  // connection's transaction at a time.
  let held: Promise<void> = Promise.resolve();
  const session = async (): Promise<SegmentSession> => {
    let release!: () => void;
    const before = held;
    held = new Promise<void>((r) => { release = r; });
    await before;
    return { query: (text) => send(text, [], true) as Promise<Array<Array<Record<string, any>>>>, release };
  };
  return { session, query, close: async () => { await worker.terminate(); rmSync(dir, { recursive: true, force: true }); } };
}

type Call =
  | { kind: 'track'; key: string; event: Record<string, unknown>; claim?: { k: string; v: string; p: string } }
  | { kind: 'identify'; key: string; k: string; v: string; profileId: string; traits: Record<string, unknown> };
type Track = Extract<Call, { kind: 'track' }>;
type Identify = Extract<Call, { kind: 'identify' }>;
type Pending = Call & { res: HttpResponse; state: { aborted: boolean }; batch?: BatchAnswer; slot?: number };
/** A `/v1/batch` request: answered once every call of it is stored. */
interface BatchAnswer { results: CallResult[]; left: number }

/** Stores a batch of track calls (distinct messageIds): 201 with the event for a new one, 200 with the original for a replay. */
async function storeTracks(calls: Track[]): Promise<CallResult[]> {
  if (segmentStore) {
    return segmentStore(calls.map((c) => {
      const e = c.event as { event: string; receivedAt: string; identifiers?: Record<string, unknown> };
      return { key: c.key, event: c.event, profile: String(Object.values(e.identifiers ?? {})[0] ?? ''), name: e.event, day: e.receivedAt.slice(0, 10) };
    }));
  }
  const claims = calls.some((c) => c.claim);
  const rows = calls.map((c) => (claims ? { m: c.key, r: c.event, ...c.claim } : { m: c.key, r: c.event }));
  const [row] = await db.query(claims ? INSERT_CLAIM : INSERT, [JSON.stringify(rows), ORG, APP]);
  const inserted = new Set<string>(row!.ids);
  if (landing) landing.add(calls.filter((c) => inserted.has(c.key)).map(eventRecord));
  const replays = calls.filter((c) => !inserted.has(c.key));
  const originals = new Map<string, unknown>();
  if (replays.length) for (const r of await db.query(ORIGINALS, [replays.map((c) => c.key), ORG, APP])) originals.set(r.message_id, r.result);
  return calls.map((c) => (inserted.has(c.key) ? { status: 201, data: c.event } : { status: 200, data: originals.get(c.key) }));
}

/** A new event as headwater lands it (a single call's claims no profile: its profileId is empty). */
function eventRecord(c: Track): EventRecord {
  const e = c.event as { id: string; messageId: string; event: string; properties: Record<string, unknown>; timestamp: string; receivedAt: string; profileId?: string };
  return { id: e.id, orgId: ORG, appId: APP, sourceId: 'src_floor', profileId: e.profileId ?? '', environment: 'production',
    event: e.event, properties: e.properties, timestamp: e.timestamp, receivedAt: e.receivedAt, messageId: e.messageId };
}

/** Stores a batch of identify calls (distinct identifiers): 200 with the profile, new or merged into. */
async function storeIdentifies(calls: Identify[]): Promise<CallResult[]> {
  const rows = calls.map((c) => ({ k: c.k, v: c.v, p: c.profileId, t: c.traits }));
  const [row] = await db.query(IDENTIFY, [JSON.stringify(rows), ORG, APP]);
  const created = new Set<string>(row!.ids);
  const rest = rows.filter((r) => !created.has(r.p));
  const merged = new Map<string, { id: string; traits: unknown }>();
  if (rest.length) for (const r of await db.query(MERGE, [JSON.stringify(rest), ORG, APP])) merged.set(`${r.k}\u0001${r.v}`, { id: r.id, traits: r.traits });
  return calls.map((c) => (created.has(c.profileId) ? { status: 200, data: { id: c.profileId, traits: c.traits } } : { status: 200, data: merged.get(c.key) }));
}

/** A batch must not repeat a key (messageId, identifier): a repeat is stored by a later statement. */
async function storeAll(calls: Call[]): Promise<CallResult[]> {
  const out: CallResult[] = new Array(calls.length);
  let left = calls.map((c, i) => ({ c, i }));
  while (left.length) {
    const seen = new Set<string>();
    const tracks: Array<{ c: Track; i: number }> = [];
    const identifies: Array<{ c: Identify; i: number }> = [];
    const later: typeof left = [];
    for (const x of left) {
      if (seen.has(x.c.key)) { later.push(x); continue; }
      seen.add(x.c.key);
      if (x.c.kind === 'track') tracks.push({ c: x.c, i: x.i }); else identifies.push({ c: x.c, i: x.i });
    }
    const [t, id] = await Promise.all([
      tracks.length ? storeTracks(tracks.map((x) => x.c)) : [],
      identifies.length ? storeIdentifies(identifies.map((x) => x.c)) : [],
    ]);
    tracks.forEach((x, k) => { out[x.i] = t[k]!; });
    identifies.forEach((x, k) => { out[x.i] = id[k]!; });
    left = later;
  }
  return out;
}

/** The call in a parsed body, or undefined when it is not a track or identify call this floor takes. */
function callOf(identify: boolean, d: any, id: string, at: number): Call | undefined {
  if (identify) {
    const [k, v] = Object.entries(d?.identifiers ?? {})[0] ?? [];
    if (typeof k !== 'string' || typeof v !== 'string') return undefined;
    return { kind: 'identify', key: `${k}\u0001${v}`, k, v, profileId: `prf_${id}`, traits: d.traits ?? {} };
  }
  if (typeof d?.messageId !== 'string' || typeof d.event !== 'string') return undefined;
  const iso = new Date(at).toISOString();
  return { kind: 'track', key: d.messageId, event: { id, messageId: d.messageId, event: d.event, identifiers: d.identifiers, properties: d.properties ?? {}, timestamp: d.timestamp ?? iso, receivedAt: iso } };
}

function answer(res: HttpResponse, state: { aborted: boolean }, r: CallResult) {
  if (state.aborted) return;
  const status = r.status === 201 ? '201 Created' : r.status === 200 ? '200 OK' : `${r.status} Error`;
  const body = JSON.stringify('data' in r ? { data: r.data } : { error: (r as { error: unknown }).error });
  res.cork(() => { res.writeStatus(status).writeHeader('content-type', 'application/json').end(body); });
}

/** A track call of a batch also claims its first identifier for a new profile named after `id`. */
function withClaim(c: Call | undefined, d: any, id: string): Call | undefined {
  const [k, v] = Object.entries(d?.identifiers ?? {})[0] ?? [];
  if (c?.kind === 'track' && typeof k === 'string' && typeof v === 'string') {
    c.claim = { k, v, p: `prf_${id}` };
    // The event names the profile it claims (its owner, had it one, is not looked up: as a
    // resolved one would, the name lands in the stored answer's profile index).
    c.event.profileId = c.claim.p;
  }
  return c;
}

/** Answers a single call, or fills its slot of a batch and answers the batch once it is full. */
function settle(p: Pending, r: CallResult) {
  if (!p.batch) { answer(p.res, p.state, r); return; }
  p.batch.results[p.slot!] = r;
  if (--p.batch.left === 0) answer(p.res, p.state, { status: 200, data: p.batch.results } as CallResult);
}

const unavailable = (err: unknown): CallResult => ({ status: 503, error: { code: 'dependency_unavailable', message: String(err) } } as CallResult);

const db = await openStore();
const segmentStore = withSegments ? floorSegments({ open: db.session, table, org: ORG, app: APP, prefix }) : undefined;
const landing: FloorLanding | undefined = clickhouse === 'chdb' ? await openFloorLanding({ lingerMs: store === 'pg' ? 1_000 : 250 }) : undefined;
let queue: Pending[] = [];
let running = 0;

// Without the stream: the calls that arrived while a batch was stored form the next batch.
function pump() {
  while (running < inflight && queue.length > 0) {
    const batch = queue.length > 500 ? queue.splice(0, 500) : queue;
    if (batch === queue) queue = [];
    running++;
    void storeAll(batch)
      .then((rs) => batch.forEach((p, i) => settle(p, rs[i]!)), (err) => batch.forEach((p) => settle(p, unavailable(err))))
      .finally(() => { running--; pump(); });
  }
}

// With the stream: one submit per request (as headwater's front end), batches stored by the consumer.
let nats: { front: NatsConnection; back: NatsConnection; ingest: IngestStream; close(): Promise<void> } | undefined;
if (viaNats) {
  const log = createLogger('warn');
  const prefix = `F${randomBytes(4).toString('hex')}`;
  const servers = (process.env.NATS_URL || 'nats://127.0.0.1:4222').replace(/^nats:\/\//, '');
  const front = await connect({ servers });
  const back = await connect({ servers });
  const f = await createJetStreams({ nc: front, log, names: { prefix } });
  const w = await createJetStreams({ nc: back, log, names: { prefix } });
  const consumer = w.ingest.consume(async (calls: IngestCall[]) => {
    // Only a batch's calls claim (marked by onBatch), so the single-call figures keep their meaning.
    const parsed = calls.map((c) => {
      const x = callOf(c.kind === 'identify', c.body, c.id, c.receivedAt);
      return (c.body as { floorClaim?: boolean } | undefined)?.floorClaim ? withClaim(x, c.body, c.id) : x;
    });
    const ok = parsed.filter((c): c is Call => c !== undefined);
    const stored = await storeAll(ok);
    let k = 0;
    return parsed.map((c) => (c ? stored[k++]! : ({ status: 422, error: { code: 'validation_failed', message: 'not a call this floor takes' } } as CallResult)));
  }, { maxInFlight: inflight });
  nats = {
    front, back, ingest: f.ingest,
    async close() {
      await consumer.close();
      for (const s of [f.ingest, f.events, w.ingest, w.events]) await s.close();
      await deleteStreams(await jetstreamManager(front), streamNames(prefix));
      await front.close(); await back.close();
    },
  };
}

function onPost(res: HttpResponse, req: HttpRequest) {
  const url = req.getUrl();
  const identify = url.endsWith('/identify');
  const isBatch = url.endsWith('/batch');
  const state = { aborted: false };
  let parts: Buffer[] | undefined;
  res.onAborted(() => { state.aborted = true; });
  res.onData((chunk, isLast) => {
    const piece = Buffer.from(chunk.slice(0));
    if (!isLast) { (parts ??= []).push(piece); return; }
    if (state.aborted) return;
    let body: any;
    try { body = JSON.parse((parts ? Buffer.concat([...parts, piece]) : piece).toString('utf8')); } catch { body = undefined; }
    const at = Date.now();
    if (isBatch) { onBatch(res, state, body?.data?.calls, at); return; }
    const id = `evt_${prefix}${(++seq).toString(36)}`;
    const call = callOf(identify, body?.data, id, at);
    if (!call) {
      res.cork(() => { res.writeStatus('422 Unprocessable Entity').end('{"error":{"code":"validation_failed","message":"not a call this floor takes"}}'); });
      return;
    }
    if (nats) {
      const c = { id, kind: call.kind, orgId: 'org_floor', appId: 'app_floor', sourceId: 'src_floor', environment: 'production', receivedAt: at, body: body.data } as IngestCall;
      nats.ingest.submit([c]).then(([r]) => answer(res, state, r!), (err) => answer(res, state, unavailable(err)));
      return;
    }
    queue.push({ ...call, res, state });
    pump();
  });
}

/** `/v1/batch` without the stream: every call joins the queue, and the request is answered once all are stored. */
function onBatch(res: HttpResponse, state: { aborted: boolean }, list: unknown, at: number) {
  const items = Array.isArray(list) ? list.map((d: any) => {
    const id = `evt_${prefix}${(++seq).toString(36)}`;
    return { d, id, c: withClaim(callOf(d?.type === 'identify', d, id, at), d, id) };
  }) : [];
  if (items.length === 0 || items.some((x) => x.c === undefined)) {
    res.cork(() => { res.writeStatus('422 Unprocessable Entity').end('{"error":{"code":"validation_failed","message":"not a batch this floor takes"}}'); });
    return;
  }
  if (nats) {
    // One submit per request, as headwater's front end does; the consumer claims the identifiers.
    const submitted = items.map(({ d, id, c }) => ({ id, kind: c!.kind, orgId: 'org_floor', appId: 'app_floor', sourceId: 'src_floor',
      environment: 'production', receivedAt: at, body: { ...d, floorClaim: true } }) as IngestCall);
    nats.ingest.submit(submitted).then((rs) => answer(res, state, { status: 200, data: rs } as CallResult), (err) => answer(res, state, unavailable(err)));
    return;
  }
  const batch: BatchAnswer = { results: new Array(items.length), left: items.length };
  items.forEach(({ c }, slot) => queue.push({ ...c!, res, state, batch, slot }));
  pump();
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
  void (nats?.close() ?? Promise.resolve()).catch(() => {}).then(() => landing?.close()).catch(() => {}).then(() => db.close()).finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
