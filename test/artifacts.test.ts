// Artifacts: content-addressed uploads per org (HEAD / PUT), digest checks, dedup, concurrent
// uploads of one digest, the artifact limit enforced while the body streams in, credentials and
// cross-org isolation.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { startServer, call, createOrg, expectError, poll, rawRequest } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());
const org = await createOrg(s);
const admin = org.sessions.admin;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const put = (digest: string, bytes: Buffer, token = admin, kind = 'bundle') =>
  call(s.url, 'PUT', `/v1/artifacts/${digest}?kind=${kind}`, { token, raw: bytes, contentType: 'application/octet-stream' });
const head = (digest: string, token = admin) => call(s.url, 'HEAD', `/v1/artifacts/${digest}`, { token });
const isDateTime = (v: unknown) => typeof v === 'string' && !Number.isNaN(Date.parse(v));

t.test('PUT stores (201), a second PUT finds it (200), HEAD reports its size without a body', async (t) => {
  const bytes = randomBytes(700 * 1024); // several stored chunks
  const digest = sha(bytes);
  t.equal((await head(digest)).status, 404, 'unknown before the upload');
  const first = await put(digest, bytes);
  t.equal(first.status, 201, first.text);
  t.same(Object.keys(first.body.data).sort(), ['createdAt', 'digest', 'kind', 'size']);
  t.equal(first.body.data.digest, digest);
  t.equal(first.body.data.kind, 'bundle');
  t.equal(first.body.data.size, bytes.length);
  t.ok(isDateTime(first.body.data.createdAt));
  t.equal(first.body.meta.requestId, first.headers.get('x-request-id'));
  const again = await put(digest, bytes);
  t.equal(again.status, 200, 'already present');
  t.same(again.body.data, first.body.data, 'the stored artifact, unchanged');
  const h = await head(digest);
  t.equal(h.status, 200);
  t.equal(h.headers.get('content-length'), String(bytes.length), 'content-length is the artifact size');
  t.equal(h.text, '', 'no body');
});

t.test('an empty artifact is an artifact', async (t) => {
  const digest = sha(Buffer.alloc(0));
  const r = await put(digest, Buffer.alloc(0), admin, 'source');
  t.equal(r.status, 201, r.text);
  t.equal(r.body.data.size, 0);
  t.equal(r.body.data.kind, 'source');
  const h = await head(digest);
  t.equal(h.status, 200);
  t.equal(h.headers.get('content-length'), '0');
});

t.test('bytes that do not hash to the digest are refused and nothing is stored', async (t) => {
  const bytes = randomBytes(300 * 1024);
  const wrong = sha(randomBytes(16));
  expectError(t, await put(wrong, bytes), 422, 'validation_failed', 'mismatch', 'digest');
  t.equal((await head(wrong)).status, 404, 'not stored under the wrong digest');
  t.equal((await head(sha(bytes))).status, 404, 'nor under its real digest');
  // Present or not, the body must hash to the digest.
  const good = randomBytes(1000);
  t.equal((await put(sha(good), good)).status, 201);
  expectError(t, await put(sha(good), randomBytes(1000)), 422, 'validation_failed', 'mismatch on a stored digest');
});

t.test('a digest that is not 64 lowercase hex characters is 422', async (t) => {
  const d = sha(Buffer.from('x'));
  for (const bad of [d.toUpperCase(), d.slice(0, 63), d + '0', 'g'.repeat(64), 'sha256:' + d.slice(7)]) {
    expectError(t, await put(bad, Buffer.from('x')), 422, 'validation_failed', `PUT ${bad.slice(0, 10)}`, '/digest');
    const h = await head(bad);
    t.equal(h.status, 422, `HEAD ${bad.slice(0, 10)} is 422`);
    t.equal(h.text, '', 'HEAD answers no body');
  }
});

t.test('kind is required and must be bundle or source', async (t) => {
  const b = Buffer.from('kind');
  expectError(t, await call(s.url, 'PUT', `/v1/artifacts/${sha(b)}`, { token: admin, raw: b }), 422, 'validation_failed', 'no kind', 'kind');
  expectError(t, await put(sha(b), b, admin, 'image'), 422, 'validation_failed', 'bad kind', 'kind');
  t.equal((await head(sha(b))).status, 404);
});

t.test('credentials: sessions, deploy and pipeline keys upload; the API key does not', async (t) => {
  const cases: Array<[string, string | undefined, number]> = [
    ['admin session', org.sessions.admin, 201], ['member session', org.sessions.member, 201],
    ['deploy key', org.deployKey, 201], ['pipeline key', org.pipelineKey, 201],
    ['api key', org.apiKey, 401], ['no credential', undefined, 401], ['garbage', 'hwp_nope', 401],
  ];
  for (const [name, token, status] of cases) {
    const bytes = randomBytes(64);
    const r = await call(s.url, 'PUT', `/v1/artifacts/${sha(bytes)}?kind=bundle`, { token, raw: bytes });
    if (status === 401) expectError(t, r, 401, 'invalid_key', `PUT ${name}`);
    else t.equal(r.status, status, `PUT ${name}`);
    const h = await call(s.url, 'HEAD', `/v1/artifacts/${sha(bytes)}`, { token });
    t.equal(h.status, status === 201 ? 200 : 401, `HEAD ${name}`);
  }
});

t.test('artifacts are per org: another org neither sees nor shares them', async (t) => {
  const other = await createOrg(s);
  const bytes = randomBytes(2048);
  const digest = sha(bytes);
  t.equal((await put(digest, bytes)).status, 201);
  t.equal((await head(digest, other.sessions.admin)).status, 404, 'org B does not have org A\'s artifact');
  t.equal((await head(digest, other.pipelineKey)).status, 404);
  const b = await put(digest, bytes, other.sessions.admin);
  t.equal(b.status, 201, 'org B stores its own copy');
});

t.test('concurrent uploads of one digest store it once', async (t) => {
  const bytes = randomBytes(2 * 1024 * 1024);
  const digest = sha(bytes);
  const answers = await Promise.all([0, 1, 2, 3].map(() => put(digest, bytes)));
  const statuses = answers.map((a) => a.status).sort();
  t.equal(statuses.filter((x) => x === 201).length, 1, `one 201 (${statuses})`);
  t.equal(statuses.filter((x) => x === 200).length, 3, 'the others 200');
  t.equal(new Set(answers.map((a) => a.body.data.createdAt)).size, 1, 'all answer the one stored artifact');
  if (process.env.DATABASE_URL) {
    const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    try {
      const rows = await db.query('SELECT blob_id FROM artifacts WHERE org_id = $1 AND digest = $2', [org.org.id, digest]);
      t.equal(rows.rows.length, 1, 'one artifact row');
      const blobs = await db.query(`SELECT count(DISTINCT c.blob_id)::int AS n FROM artifact_chunks c JOIN artifact_uploads u USING (blob_id) WHERE u.org_id = $1`, [org.org.id]);
      t.equal(blobs.rows[0].n, 0, 'no staged chunks left behind');
      const chunks = await db.query('SELECT sum(length(bytes))::int AS n FROM artifact_chunks WHERE blob_id = $1', [rows.rows[0].blob_id]);
      t.equal(chunks.rows[0].n, bytes.length, 'the bytes once');
    } finally { await db.end(); }
  }
});

t.test('a client that vanishes mid-upload leaves nothing behind', async (t) => {
  const digest = sha(randomBytes(8));
  const r = await rawRequest(s.url, `/v1/artifacts/${digest}?kind=bundle`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${admin}`, 'content-length': String(2 * 1024 * 1024) },
    chunks: [randomBytes(700 * 1024)],
    destroyAfterMs: 300,
  });
  t.equal(r.status, 0, 'no answer to a vanished client');
  t.equal((await head(digest)).status, 404, 'nothing published');
  t.equal((await call(s.url, 'GET', '/health/live')).status, 200, 'the server is fine');
  if (process.env.DATABASE_URL) {
    const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    try {
      const left = await poll(async () => (await db.query('SELECT count(*)::int AS n FROM artifact_uploads WHERE org_id = $1', [org.org.id])).rows[0].n,
        (n) => n === 0, 10_000);
      t.equal(left, 0, 'the staged chunks were removed');
    } finally { await db.end(); }
  }
});
