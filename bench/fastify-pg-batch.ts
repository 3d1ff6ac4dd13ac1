// The batch comparison service of the benchmark (issue 22): what a user would write for SDK batches
// instead of headwater. Fastify 5 parses `POST /v1/batch` ({ data: { sourceId, calls: [...] } }, the
// headwater body), a minimal hand-written check judges each call, and per request, in one
// transaction:
//   - one multi-row INSERT of the batch's track events (messageId primary key, ON CONFLICT DO
//     NOTHING: a replayed messageId is answered 200, a new one 201), and
//   - one multi-row upsert of the batch's profiles: one row per distinct userId (or anonymousId),
//     identify traits merged in call order, then merged onto the stored traits (jsonb ||); a track
//     call creates its profile when missing. Rows are sorted by key so concurrent upserts take
//     their row locks in one order (no deadlocks); a deadlock or serialization failure is retried.
// Answers 200 { data: [ { status, data } | { status, error } ] }, one result per call in order.
// It creates its own two tables with a random suffix and drops them when stopped (SIGTERM / SIGINT).
//
//   DATABASE_URL=postgres://... node dist/bench/fastify-pg-batch.js [--port P] [--host H]
//   (prints "listening on http://H:P" once the tables exist and the port is open)
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { arg } from './args.js';
import { live } from './baseline-life.js';

const host = arg('--host', '127.0.0.1');
const port = Number(arg('--port', '0'));
const databaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const sfx = randomBytes(4).toString('hex');
const events = `bench_bevents_${sfx}`;
const profiles = `bench_bprofiles_${sfx}`;

const pool = new pg.Pool({ connectionString: databaseUrl });
pool.on('error', (err) => process.stderr.write(`fastify-pg-batch: idle client error: ${err.message}\n`));

await pool.query(`CREATE TABLE ${events} (
  message_id text PRIMARY KEY,
  user_id text,
  anonymous_id text,
  event text NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  ts timestamptz NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
)`);
await pool.query(`CREATE TABLE ${profiles} (
  key text PRIMARY KEY,
  traits jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
)`);

let dropped = false;
async function dropTables() {
  if (dropped) return;
  dropped = true;
  await pool.query(`DROP TABLE IF EXISTS ${events}, ${profiles}`).catch((err) => process.stderr.write(`fastify-pg-batch: drop failed: ${err.message}\n`));
}

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown, max = 200): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

type Result = { status: number; data?: unknown; error?: { code: string; message: string } };
const invalid = (message: string): Result => ({ status: 422, error: { code: 'validation_failed', message } });

const insertEvents = `INSERT INTO ${events} (message_id, user_id, anonymous_id, event, properties, ts)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])
  ON CONFLICT (message_id) DO NOTHING RETURNING message_id`;
// Existing rows are rewritten only when the batch brings traits (a track call leaves them alone).
const upsertProfiles = `INSERT INTO ${profiles} AS p (key, traits)
  SELECT * FROM unnest($1::text[], $2::jsonb[])
  ON CONFLICT (key) DO UPDATE SET traits = p.traits || EXCLUDED.traits, updated_at = now()
    WHERE EXCLUDED.traits <> '{}'::jsonb
  RETURNING key, traits`;

app.post('/v1/batch', async (request, reply) => {
  const body = request.body;
  const d = isObj(body) ? body.data : undefined;
  const calls = isObj(d) ? d.calls : undefined;
  if (!isObj(d) || !str(d.sourceId) || !Array.isArray(calls) || calls.length < 1 || calls.length > 500) {
    return reply.code(422).send({ error: { code: 'validation_failed', message: 'body is not a valid batch' } });
  }
  const now = new Date().toISOString();
  const results: Result[] = new Array(calls.length);
  // Track rows (first occurrence of a messageId in the batch), and profile traits by key.
  const ev = { mid: [] as string[], uid: [] as (string | null)[], aid: [] as (string | null)[], name: [] as string[], props: [] as string[], ts: [] as string[] };
  const evIndex = new Map<string, number[]>(); // messageId -> call indexes
  const traits = new Map<string, Record<string, unknown>>();
  const identifyKey: Array<string | undefined> = new Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i];
    const ids = isObj(c) ? c.identifiers : undefined;
    if (!isObj(c) || !isObj(ids) || (!str(ids.userId) && !str(ids.anonymousId))) { results[i] = invalid('call needs identifiers.userId or identifiers.anonymousId'); continue; }
    const key = str(ids.userId) ? `u:${ids.userId}` : `a:${ids.anonymousId as string}`;
    if (c.type === 'track') {
      if (!str(c.event) || !str(c.messageId, 1000) || (c.properties !== undefined && !isObj(c.properties))) { results[i] = invalid('not a valid track call'); continue; }
      const seen = evIndex.get(c.messageId);
      if (seen) { seen.push(i); continue; } // an in-batch duplicate answers like the first
      evIndex.set(c.messageId, [i]);
      ev.mid.push(c.messageId); ev.uid.push(str(ids.userId) ? ids.userId : null); ev.aid.push(str(ids.anonymousId) ? ids.anonymousId : null);
      ev.name.push(c.event); ev.props.push(JSON.stringify(c.properties ?? {}));
      ev.ts.push(typeof c.timestamp === 'string' ? c.timestamp : now);
      if (!traits.has(key)) traits.set(key, {});
    } else if (c.type === 'identify') {
      if (c.traits !== undefined && !isObj(c.traits)) { results[i] = invalid('not a valid identify call'); continue; }
      traits.set(key, { ...(traits.get(key) ?? {}), ...(c.traits as Record<string, unknown> | undefined ?? {}) });
      identifyKey[i] = key;
    } else { results[i] = invalid('type is identify or track'); }
  }
  const keys = [...traits.keys()].sort();
  const traitJson = keys.map((k) => JSON.stringify(traits.get(k)));
  let inserted = new Set<string>();
  let stored = new Map<string, unknown>();
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const e = ev.mid.length ? await client.query(insertEvents, [ev.mid, ev.uid, ev.aid, ev.name, ev.props, ev.ts]) : { rows: [] };
      const p = keys.length ? await client.query(upsertProfiles, [keys, traitJson]) : { rows: [] };
      await client.query('COMMIT');
      inserted = new Set(e.rows.map((r: { message_id: string }) => r.message_id));
      stored = new Map(p.rows.map((r: { key: string; traits: unknown }) => [r.key, r.traits]));
      client.release();
      break;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
      const code = (err as { code?: string }).code;
      if ((code === '40P01' || code === '40001') && attempt < 5) continue;
      return reply.code(500).send({ error: { code: 'internal', message: (err as Error).message } });
    }
  }
  for (let j = 0; j < ev.mid.length; j++) {
    const mid = ev.mid[j]!;
    const data = { messageId: mid, event: ev.name[j], userId: ev.uid[j], anonymousId: ev.aid[j], timestamp: ev.ts[j] };
    const idx = evIndex.get(mid)!;
    idx.forEach((i, n) => { results[i] = { status: n === 0 && inserted.has(mid) ? 201 : 200, data }; });
  }
  for (let i = 0; i < calls.length; i++) {
    const key = identifyKey[i];
    if (key !== undefined) results[i] = { status: 200, data: { key, traits: stored.get(key) ?? traits.get(key) } };
  }
  return reply.code(200).send({ data: results });
});

app.get('/health/live', async () => ({ data: { status: 'ok' } }));

await live({ app, pool, host, port, name: 'fastify-pg-batch', describe: `tables ${events} ${profiles}`, cleanup: dropTables });
