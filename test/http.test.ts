// Transport and envelope (OpenAPI document: "Conventions"): unknown routes, body
// framing and parsing, the body limit with and without content-length, nesting depth, long
// request heads, x-request-id, health probes and clients that vanish mid-request.
import t from 'tap';
import { startServer, call, createOrg, expectError, rawRequest, type Asserter, type RawRes } from './helpers/server.js';

const s = await startServer();
let closed = false;
t.teardown(() => (closed ? undefined : s.close()));

const LIMIT = 1024 * 1024;
const org = await createOrg(s);
const admin = org.sessions.admin;
const app = (await call(s.url, 'POST', '/v1/apps', { token: admin, body: { data: { name: 'http-app' } } })).body.data;
const source = (await call(s.url, 'GET', `/v1/apps/${app.id}/sources`, { token: admin })).body.data[0];
const sourcePath = `/v1/sources/${source.id}`;

/** Error assertions for node:http answers (lower-case header object). */
const expectRawError = (t: Asserter, r: RawRes, status: number, code: string, what: string) => {
  t.equal(r.status, status, `${what}: status ${status} (${r.text.slice(0, 200)})`);
  t.equal(r.body?.error?.code, code, `${what}: code ${code}`);
  t.ok(typeof r.body?.error?.message === 'string' && r.body.error.message.length > 0, `${what}: message`);
  t.ok(r.headers['x-request-id'], `${what}: x-request-id header`);
  t.equal(r.body?.meta?.requestId, r.headers['x-request-id'], `${what}: meta.requestId equals x-request-id`);
};

/** The service still answers, including a route that reads the database. */
const stillAlive = async (t: Asserter, what: string) => {
  const live = await call(s.url, 'GET', '/health/live');
  t.equal(live.status, 200, `${what}: /health/live still 200`);
  const apps = await call(s.url, 'GET', '/v1/apps', { token: admin });
  t.equal(apps.status, 200, `${what}: GET /v1/apps still 200`);
};

/** `{"data":{"config":X}}` where X nests `k` levels: the whole body nests k + 2 levels. */
const nestedBody = (k: number, open = '{"a":', leaf = '{}', close = '}') =>
  `{"data":{"config":${open.repeat(k - 1)}${leaf}${close.repeat(k - 1)}}}`;

/** Like nestedBody, alternating arrays and objects. */
const mixedBody = (k: number) => {
  let open = '', close = '';
  for (let i = 0; i < k - 1; i++) { if (i % 2) { open += '['; close = ']' + close; } else { open += '{"a":'; close = '}' + close; } }
  return `{"data":{"config":${open}[]${close}}}`;
};

t.test('unknown routes answer a 404 not_found envelope', async (t) => {
  const cases: Array<[string, string]> = [
    ['GET', '/v1/nope'],
    ['GET', '/nope'],
    ['GET', '/'],
    ['POST', '/v1/apps/x/y/z'],
    ['DELETE', '/v1/apps'],
    ['PUT', '/v1/apps'],
    ['GET', '/v2/apps'],
    ['GET', '/health'],
  ];
  for (const [method, path] of cases) {
    const r = await call(s.url, method, path, { token: admin });
    expectError(t, r, 404, 'not_found', `${method} ${path}`);
    t.match(r.headers.get('content-type') ?? '', /^application\/json/, `${method} ${path}: JSON answer`);
  }
  // Without a credential too: a 404 is not hidden behind auth for unknown paths.
  expectError(t, await call(s.url, 'GET', '/v1/nope'), 404, 'not_found', 'unknown route without credential');
});

t.test('malformed bodies are 400 malformed_request', async (t) => {
  const cases: Array<[string, string, string | undefined]> = [
    ['invalid JSON (truncated)', '{"data":', 'application/json'],
    ['invalid JSON (unquoted keys)', '{data: {name: "x"}}', 'application/json'],
    ['invalid JSON (trailing comma)', '{"data":{"name":"x",}}', 'application/json'],
    ['not JSON at all', 'name=x', 'application/json'],
    ['empty body', '', 'application/json'],
    ['JSON array', '[{"data":{"name":"x"}}]', 'application/json'],
    ['JSON null', 'null', 'application/json'],
    ['JSON string', '"data"', 'application/json'],
    ['JSON number', '42', 'application/json'],
    ['object without data', '{"name":"x"}', 'application/json'],
    ['data nested one level too deep', '{"body":{"data":{"name":"x"}}}', 'application/json'],
    ['text/plain', '{"data":{"name":"x"}}', 'text/plain'],
    ['form content type', '{"data":{"name":"x"}}', 'application/x-www-form-urlencoded'],
    ['octet-stream', '{"data":{"name":"x"}}', 'application/octet-stream'],
  ];
  for (const [label, raw, contentType] of cases) {
    for (const [method, path] of [['POST', '/v1/apps'], ['PATCH', sourcePath]] as const) {
      const r = await call(s.url, method, path, { token: admin, raw, contentType });
      expectError(t, r, 400, 'malformed_request', `${label} on ${method}`);
    }
  }
  // No content-type header at all (fetch would add text/plain, so use node:http).
  const noCt = await rawRequest(s.url, '/v1/apps', { headers: { authorization: `Bearer ${admin}`, 'content-length': 21 }, chunks: ['{"data":{"name":"x"}}'] });
  expectRawError(t, noCt, 400, 'malformed_request', 'no content-type');
  // POST with no body at all.
  const none = await rawRequest(s.url, '/v1/apps', { headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'content-length': 0 } });
  expectRawError(t, none, 400, 'malformed_request', 'POST without a body');
  // Nothing above created an app.
  const apps = await call(s.url, 'GET', '/v1/apps?limit=100', { token: admin });
  t.same(apps.body.data.map((a: any) => a.name), ['http-app'], 'no app was created by malformed requests');
});

t.test('JSON content types that are accepted', async (t) => {
  for (const ct of ['application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
    const r = await call(s.url, 'PATCH', sourcePath, { token: admin, raw: '{"data":{"config":{"ct":1}}}', contentType: ct });
    t.equal(r.status, 200, `${ct}: 200 (${r.text.slice(0, 200)})`);
  }
});

t.test('body limit: 413 payload_too_large', async (t) => {
  const prefix = '{"data":{"config":{"pad":"';
  const suffix = '"}}}';
  const exact = prefix + 'a'.repeat(LIMIT - prefix.length - suffix.length) + suffix;
  t.equal(Buffer.byteLength(exact), LIMIT);
  const atLimit = await call(s.url, 'PATCH', sourcePath, { token: admin, raw: exact, contentType: 'application/json' });
  t.equal(atLimit.status, 200, `a body of exactly ${LIMIT} bytes is accepted (${atLimit.text.slice(0, 200)})`);

  const over = prefix + 'a'.repeat(LIMIT - prefix.length - suffix.length + 1) + suffix;
  t.equal(Buffer.byteLength(over), LIMIT + 1);
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  const withLength = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers: { ...headers, 'content-length': LIMIT + 1 }, chunks: [over] });
  expectRawError(t, withLength, 413, 'payload_too_large', 'one byte over, with content-length');

  // A content-length far beyond the limit is refused from the header alone.
  const big = await rawRequest(s.url, '/v1/apps', { headers: { ...headers, 'content-length': 50 * LIMIT }, chunks: ['{"data":{"name":"x"}}'] });
  expectRawError(t, big, 413, 'payload_too_large', 'huge content-length');

  // Chunked: no content-length; the limit is enforced on the bytes as they stream in.
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const chunks: Buffer[] = [Buffer.from(prefix)];
  for (let i = 0; i < 40; i++) chunks.push(chunk); // 2.5 MiB
  chunks.push(Buffer.from(suffix));
  const chunked = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers: { ...headers, 'transfer-encoding': 'chunked' }, chunks });
  expectRawError(t, chunked, 413, 'payload_too_large', 'chunked stream over the limit');

  // Control: a small chunked body is read and answered normally.
  const small = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers: { ...headers, 'transfer-encoding': 'chunked' }, chunks: ['{"data":', '{"config":', '{"chunked":true}}}'] });
  t.equal(small.status, 200, `small chunked body: 200 (${small.text.slice(0, 200)})`);
  t.same(small.body?.data?.config, { chunked: true }, 'small chunked body parsed');

  // A chunked body just over the limit, in many small chunks.
  const pieces: string[] = [prefix];
  const piece = 'b'.repeat(8191);
  let total = prefix.length + suffix.length;
  while (total <= LIMIT) { pieces.push(piece); total += piece.length; }
  pieces.push(suffix);
  const overSmall = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers: { ...headers, 'transfer-encoding': 'chunked' }, chunks: pieces });
  expectRawError(t, overSmall, 413, 'payload_too_large', 'chunked, many small chunks, over the limit');

  // The config was not replaced by any refused body.
  const src = await call(s.url, 'GET', sourcePath, { token: admin });
  t.same(src.body.data.config, { chunked: true }, 'refused bodies changed nothing');
  await stillAlive(t, 'after 413s');
});

t.test('nesting depth: 64 levels pass, 65 are 422 validation_failed', async (t) => {
  const depthRefused = (r: { status: number; body: any }) =>
    r.status === 422 && r.body?.error?.code === 'validation_failed' && /deep|depth|nest/i.test(r.body?.error?.message ?? '');
  const cases: Array<[string, string, boolean]> = [
    ['objects, body depth 64', nestedBody(62), true],
    ['arrays, body depth 64', nestedBody(62, '[', '[]', ']'), true],
    ['objects, body depth 65', nestedBody(63), false],
    ['arrays, body depth 65', nestedBody(63, '[', '[]', ']'), false],
    ['mixed, body depth 64', mixedBody(62), true],
    ['mixed, body depth 65', mixedBody(63), false],
    ['objects, body depth 66 (data value 65)', nestedBody(64), false],
    ['100000 levels', nestedBody(100_000, '[', '[]', ']'), false],
  ];
  for (const [label, raw, passes] of cases) {
    const r = await call(s.url, 'PATCH', sourcePath, { token: admin, raw, contentType: 'application/json' });
    if (passes) {
      t.equal(r.status, 200, `${label}: accepted (${r.text.slice(0, 160)})`);
      t.notOk(depthRefused(r), `${label}: not refused for depth`);
    } else {
      expectError(t, r, 422, 'validation_failed', label);
      t.ok(depthRefused(r), `${label}: the message is about nesting depth (${r.body?.error?.message})`);
    }
  }
  // Brackets inside strings (also after escaped quotes and backslashes) are not nesting.
  const inStrings = JSON.stringify({ data: { config: { a: '['.repeat(200), b: '"{'.repeat(200), c: '\\', d: '{'.repeat(200) } } });
  const rs = await call(s.url, 'PATCH', sourcePath, { token: admin, raw: inStrings, contentType: 'application/json' });
  t.equal(rs.status, 200, `brackets in strings do not count (${rs.text.slice(0, 160)})`);
  t.equal(rs.body?.data?.config?.a, '['.repeat(200), 'string kept verbatim');

  // On a route with a strict schema, 64 levels may fail other validation but not for depth.
  // body (1) > data (2) > extra arrays (3..): 62 arrays = 64 levels, 63 arrays = 65 levels.
  const deepExtra = `{"data":{"name":"deep","extra":${'['.repeat(62)}${']'.repeat(62)}}}`;
  const ra = await call(s.url, 'POST', '/v1/apps', { token: admin, raw: deepExtra, contentType: 'application/json' });
  t.notOk(depthRefused(ra), `POST /v1/apps with 64 levels: not refused for depth (${ra.status} ${ra.text.slice(0, 160)})`);
  const deepExtra65 = `{"data":{"name":"deep","extra":${'['.repeat(63)}${']'.repeat(63)}}}`;
  const rb = await call(s.url, 'POST', '/v1/apps', { token: admin, raw: deepExtra65, contentType: 'application/json' });
  expectError(t, rb, 422, 'validation_failed', 'POST /v1/apps with 65 levels');
  t.ok(depthRefused(rb), 'POST /v1/apps with 65 levels: refused for depth');
  await stillAlive(t, 'after deep bodies');
});

t.test('long request heads: a 10 KB bearer is 401 invalid_key JSON, not 431', async (t) => {
  const tokens: Array<[string, string]> = [
    ['10 KB garbage', 'x'.repeat(10 * 1024)],
    ['10 KB api-key-shaped', 'hwk_' + 'A'.repeat(10 * 1024)],
    ['10 KB jwt-shaped', `${'a'.repeat(5000)}.${'b'.repeat(5000)}.c`],
    ['10 KB operator-shaped', 'hwo_' + 'z'.repeat(10 * 1024)],
    ['15 KB garbage', 'y'.repeat(15 * 1024)],
  ];
  for (const [label, token] of tokens) {
    for (const [method, path, body] of [['GET', '/v1/apps', undefined], ['POST', '/v1/orgs', { data: { name: 'x' } }]] as const) {
      const r = await call(s.url, method, path, { token, body });
      expectError(t, r, 401, 'invalid_key', `${label} on ${method} ${path}`);
      t.match(r.headers.get('content-type') ?? '', /^application\/json/, `${label}: JSON answer`);
    }
  }
  // Heads beyond 16 KB may be refused with a bare 431, but the server must survive them.
  const huge = await call(s.url, 'GET', '/v1/apps', { token: 'q'.repeat(40 * 1024) }).catch((e: Error) => ({ status: -1, text: String(e) }));
  t.ok([401, 431, -1].includes(huge.status), `40 KB head: 401, 431 or dropped (got ${huge.status})`);
  await stillAlive(t, 'after a 40 KB head');
});

t.test('x-request-id and meta.requestId on every answer', async (t) => {
  const ids = new Set<string>();
  const cases: Array<[string, string, Record<string, unknown>]> = [
    ['GET', '/health/live', {}],
    ['GET', '/health/ready', {}],
    ['GET', '/v1/apps', { token: admin }],
    ['POST', '/v1/apps', { token: admin, body: { data: { name: 'rid' } } }],
    ['GET', `/v1/apps/${app.id}`, { token: admin }],
    ['GET', '/v1/users/me', { token: org.apiKey }],
    ['GET', '/v1/apps', {}],
    ['GET', '/v1/apps', { token: org.deployKey }],
    ['POST', '/v1/apps', { token: org.sessions.member, body: { data: { name: 'x' } } }],
    ['GET', '/v1/apps/app_missing', { token: admin }],
    ['POST', '/v1/apps', { token: admin, body: { data: { name: '' } } }],
    ['POST', '/v1/apps', { token: admin, raw: '{', contentType: 'application/json' }],
    ['GET', '/v1/missing', {}],
  ];
  for (const [method, path, o] of cases) {
    const r = await call(s.url, method, path, o);
    const rid = r.headers.get('x-request-id');
    t.ok(rid && rid.length > 0, `${method} ${path} (${r.status}): x-request-id present`);
    t.equal(r.body?.meta?.requestId, rid, `${method} ${path} (${r.status}): meta.requestId equals the header`);
    if (r.status >= 400) {
      t.type(r.body?.error?.code, 'string', `${method} ${path}: error.code`);
      t.type(r.body?.error?.message, 'string', `${method} ${path}: error.message`);
      t.notOk('data' in (r.body ?? {}), `${method} ${path}: no data member in an error`);
    } else {
      t.ok('data' in (r.body ?? {}), `${method} ${path}: data member in a success`);
      t.notOk('error' in (r.body ?? {}), `${method} ${path}: no error member in a success`);
    }
    ids.add(rid!);
  }
  t.equal(ids.size, cases.length, 'every request gets its own id');
});

t.test('health probes', async (t) => {
  const live = await call(s.url, 'GET', '/health/live');
  t.equal(live.status, 200);
  t.same(live.body.data, { status: 'ok' });
  t.equal(live.body.meta.requestId, live.headers.get('x-request-id'));
  const withJunk = await call(s.url, 'GET', '/health/live', { headers: { authorization: 'Bearer garbage' } });
  t.equal(withJunk.status, 200, 'health ignores a bad credential');

  const ready = await call(s.url, 'GET', '/health/ready');
  t.equal(ready.status, 200, `ready: 200 (${ready.text})`);
  t.equal(ready.body.data.status, 'ok');
  t.equal(ready.body.data.checks.postgres, true, 'postgres check true');
  t.equal(ready.body.data.checks.clickhouse, true, 'clickhouse check true');
  for (const [k, v] of Object.entries(ready.body.data.checks)) t.type(v, 'boolean', `check ${k} is a boolean`);

  const oa = await call(s.url, 'GET', '/openapi.json');
  t.equal(oa.status, 200, 'openapi.json: 200');
  t.match(oa.body?.openapi, /^3\.1\./, 'an OpenAPI 3.1 document');
  t.equal(oa.body?.info?.version, '1.0.0');
  t.notOk('data' in (oa.body ?? {}), 'not wrapped in the envelope');
});

t.test('clients that vanish mid-request do not hurt the server', async (t) => {
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  for (let i = 0; i < 5; i++) {
    // Announces 1000 bytes, sends 500, then the socket is destroyed.
    const r = await rawRequest(s.url, '/v1/apps', { headers: { ...headers, 'content-length': 1000 }, chunks: ['{"data":{"name":"' + 'h'.repeat(483)], destroyAfterMs: 30 });
    t.equal(r.status, 0, `abort ${i}: no answer was received`);
  }
  // Chunked and aborted.
  const c = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers: { ...headers, 'transfer-encoding': 'chunked' }, chunks: ['{"data":{"config":', '{"x":'], destroyAfterMs: 30 });
  t.equal(c.status, 0, 'chunked abort: no answer');
  // Aborted while the server works on a complete request.
  const g = await rawRequest(s.url, '/health/ready', { method: 'GET', destroyAfterMs: 0 });
  t.equal(g.status, 0, 'GET abort: no answer');
  // Aborted in the middle of an oversized body.
  const big = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers: { ...headers, 'content-length': 2 * LIMIT }, chunks: [Buffer.alloc(LIMIT / 2, 'a')], destroyAfterMs: 10 });
  t.ok(big.status === 0 || big.status === 413, 'oversized abort: no answer or 413');

  await stillAlive(t, 'after aborted clients');
  // A later write, seen in the list, before the absence of the half-sent ones is asserted.
  const created = await call(s.url, 'POST', '/v1/apps', { token: admin, body: { data: { name: 'after-abort' } } });
  t.equal(created.status, 201, 'a following write works');
  const names = (await call(s.url, 'GET', '/v1/apps?limit=100', { token: admin })).body.data.map((a: any) => a.name);
  t.notOk(names.some((n: string) => n.startsWith('hhh')), 'no half-sent app was created');
  const src = await call(s.url, 'GET', sourcePath, { token: admin });
  t.notOk(src.body.data.config && 'x' in src.body.data.config, 'the aborted chunked PATCH changed nothing');
});

t.test('shutdown is not held up by requests whose clients vanished', async (t) => {
  // The aborted uploads above must not stay counted as in flight: a graceful close waits only
  // for requests that can still finish.
  const t0 = Date.now();
  await s.close();
  closed = true;
  const took = Date.now() - t0;
  t.ok(took < 5000, `close finished in ${took} ms (under 5 s)`);
});
