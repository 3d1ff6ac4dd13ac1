// The comparison service of the benchmark: what a user would write instead of headwater. Fastify 5
// parses the body, a minimal hand-written check validates it, and each event is inserted with its
// own query (one row per request, pg.Pool with its default size) before the 201 answer.
// It creates its own table with a random suffix and drops it when stopped (SIGTERM / SIGINT).
//
//   DATABASE_URL=postgres://... node dist/bench/fastify-pg.js [--port P] [--host H]
//   (prints "listening on http://H:P" once the table exists and the port is open)
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { arg } from './args.js';
import { live } from './baseline-life.js';

const host = arg('--host', '127.0.0.1');
const port = Number(arg('--port', '0'));
const databaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const table = `bench_events_${randomBytes(4).toString('hex')}`;

const pool = new pg.Pool({ connectionString: databaseUrl });
pool.on('error', (err) => process.stderr.write(`fastify-pg: idle client error: ${err.message}\n`));

await pool.query(`CREATE TABLE ${table} (
  id bigserial PRIMARY KEY,
  message_id text NOT NULL,
  user_id text,
  anonymous_id text,
  event text NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  ts timestamptz NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
)`);

let dropped = false;
async function dropTable() {
  if (dropped) return;
  dropped = true;
  await pool.query(`DROP TABLE IF EXISTS ${table}`).catch((err) => process.stderr.write(`fastify-pg: drop failed: ${err.message}\n`));
}

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown, max = 200): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

app.post('/v1/track', async (request, reply) => {
  const body = request.body;
  const d = isObj(body) ? body.data : undefined;
  const ids = isObj(d) ? d.identifiers : undefined;
  if (!isObj(d) || !isObj(ids) || !str(d.event) || !str(d.messageId, 1000) || (!str(ids.userId) && !str(ids.anonymousId))
    || (d.properties !== undefined && !isObj(d.properties))) {
    return reply.code(422).send({ error: { code: 'validation_failed', message: 'body is not a valid track call' } });
  }
  const ts = typeof d.timestamp === 'string' ? d.timestamp : new Date().toISOString();
  const r = await pool.query(
    `INSERT INTO ${table} (message_id, user_id, anonymous_id, event, properties, ts) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [d.messageId, ids.userId ?? null, ids.anonymousId ?? null, d.event, JSON.stringify(d.properties ?? {}), ts],
  );
  return reply.code(201).send({ data: { id: String(r.rows[0].id), messageId: d.messageId, event: d.event, timestamp: ts } });
});

app.get('/health/live', async () => ({ data: { status: 'ok' } }));

await live({ app, pool, host, port, name: 'fastify-pg', describe: `table ${table}`, cleanup: dropTable });
