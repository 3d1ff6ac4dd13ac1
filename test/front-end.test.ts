// The node:http front end, forced (HEADWATER_FRONT_END=node), answers like the uWS one: it says so
// on /health/ready, refuses bodies over the limit while reading them (413 envelope), takes 16 KB
// request heads and refuses longer ones with 431, answers HEAD without a body, gives the source
// receiver's plain-text answers, keeps connections alive and closes gracefully.
import t from 'tap';
import { Agent, request, type ClientRequest } from 'node:http';
import { connect } from 'node:net';
import { createHmac, randomBytes } from 'node:crypto';
import { startServer, call, createAppFixture, expectError, rawRequest, until } from './helpers/server.js';

const LIMIT = 4096;
const s = await startServer(['--body-limit', String(LIMIT)], { HEADWATER_FRONT_END: 'node' });
let closed = false;
t.teardown(() => (closed ? undefined : s.close()));
const f = await createAppFixture(s);
const sourcePath = `/v1/sources/${f.source.id}`;
const json = { authorization: `Bearer ${f.admin}`, 'content-type': 'application/json' };

t.test('/health/ready names node:http', async (t) => {
  const r = await call(s.url, 'GET', '/health/ready');
  t.equal(r.status, 200, r.text);
  t.equal(r.body.data.frontEnd, 'node:http');
});

t.test('bodies over the limit are refused while reading: 413 envelope', async (t) => {
  const cases: Array<[string, Record<string, string | number>, Array<string | Buffer>]> = [
    ['content-length over the limit', { ...json, 'content-length': 50 * LIMIT }, ['{"data":{}}']],
    ['chunked stream over the limit', { ...json, 'transfer-encoding': 'chunked' }, ['{"data":{"config":{"p":"', ...Array(64).fill(Buffer.alloc(1024, 'a')), '"}}}']],
    ['one byte over, with content-length', { ...json, 'content-length': LIMIT + 1 }, [`{"data":{"config":{"p":"${'b'.repeat(LIMIT + 1 - 28)}"}}}`]],
  ];
  for (const [what, headers, chunks] of cases) {
    const r = await rawRequest(s.url, sourcePath, { method: 'PATCH', headers, chunks });
    t.equal(r.status, 413, `${what}: 413 (${r.text.slice(0, 120)})`);
    t.equal(r.body?.error?.code, 'payload_too_large', `${what}: payload_too_large`);
    t.equal(r.body?.meta?.requestId, r.headers['x-request-id'], `${what}: meta.requestId equals x-request-id`);
  }
  const exact = `{"data":{"config":{"p":"${'c'.repeat(LIMIT - 28)}"}}}`;
  t.equal(Buffer.byteLength(exact), LIMIT);
  const ok = await call(s.url, 'PATCH', sourcePath, { token: f.admin, raw: exact, contentType: 'application/json' });
  t.equal(ok.status, 200, `a body of exactly the limit is accepted (${ok.text.slice(0, 120)})`);
  t.equal((await call(s.url, 'GET', '/health/live')).status, 200, 'still serving');
});

t.test('request heads: 15 KB pass to auth (401 envelope), 20 KB are 431', async (t) => {
  const r = await call(s.url, 'GET', '/v1/apps', { token: 'x'.repeat(15 * 1024) });
  expectError(t, r, 401, 'invalid_key', '15 KB bearer');
  const big = await rawRequest(s.url, '/v1/apps', { method: 'GET', headers: { authorization: `Bearer ${'y'.repeat(20 * 1024)}` } });
  t.equal(big.status, 431, '20 KB head: 431');
  t.equal((await call(s.url, 'GET', '/v1/apps', { token: f.admin })).status, 200, 'still serving');
});

t.test('HEAD answers carry no body', async (t) => {
  const r = await rawRequest(s.url, '/v1/nope', { method: 'HEAD' });
  t.equal(r.status, 404);
  t.equal(r.text, '', 'no body');
  t.equal(r.headers['content-length'], '0');
  t.ok(r.headers['x-request-id'], 'x-request-id header');
});

t.test('source receiver: plain-text answers', async (t) => {
  const secret = 'whsec_' + randomBytes(24).toString('base64');
  const src = await call(s.url, 'POST', `/v1/apps/${f.app.id}/sources`, { token: f.admin, body: { data: { kind: 'idp', config: { signingSecret: secret } } } });
  t.equal(src.status, 201, src.text);
  const body = JSON.stringify({ type: 'user.created', object: 'event', data: { id: `user_${randomBytes(4).toString('hex')}`, object: 'user', email_addresses: [], first_name: 'Ada', last_name: null, created_at: Date.now() } });
  const id = `msg_${randomBytes(8).toString('hex')}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const sig = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`${id}.${ts}.${body}`).digest('base64');
  const path = `/v1/sources/${src.body.data.id}/webhook`;
  const good = await call(s.url, 'POST', path, { raw: body, contentType: 'application/json', headers: { 'svix-id': id, 'svix-timestamp': ts, 'svix-signature': `v1,${sig}` } });
  t.equal(good.status, 200);
  t.equal(good.text, 'ok');
  t.match(good.headers.get('content-type') ?? '', /^text\/plain/);
  const bad = await call(s.url, 'POST', path, { raw: body, contentType: 'application/json', headers: { 'svix-id': id, 'svix-timestamp': ts, 'svix-signature': 'v1,AAAA' } });
  t.equal(bad.status, 401);
  t.equal(bad.text, 'invalid signature');
});

t.test('keep-alive: one connection carries several requests', async (t) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const u = new URL(s.url);
  const get = () => new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: '/health/live', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
  const first = await get();
  const second = await get();
  t.equal(first.status, 200);
  t.equal(second.status, 200);
  t.equal(second.reused, true, 'the second request reused the connection');
});

t.test('graceful close: a request in flight is answered, then the port is closed', async (t) => {
  // A body sent slowly keeps the request in flight while close() begins: the rest of it is sent
  // once the port no longer takes connections.
  const u = new URL(s.url);
  const [head, tail] = ['{"data":{"config":', '{"g":1}}}'];
  let req!: ClientRequest;
  const answer = new Promise<number>((resolve, reject) => {
    req = request({ host: u.hostname, port: u.port, path: sourcePath, method: 'PATCH', headers: { ...json, 'content-length': head.length + tail.length, expect: '100-continue' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.write(head);
  });
  // node:http answers 100 Continue as it hands the request to the handler: from then on it is in flight.
  t.ok(await Promise.race([new Promise<boolean>((r) => req.once('continue', () => r(true))), answer.then(() => false)]), 'the request reached the handler');
  const closing = s.close();
  closed = true;
  const refused = () => new Promise<boolean>((r) => {
    const c = connect(Number(u.port), u.hostname, () => { c.destroy(); r(false); });
    c.on('error', () => r(true));
  });
  t.ok(await until(refused, 5000, 10), 'the port closed while the request was in flight');
  req.end(tail);
  t.equal(await answer, 200, 'the request in flight got its answer');
  await closing;
  const after = await call(s.url, 'GET', '/health/live').then((r) => r.status, () => -1);
  t.equal(after, -1, 'nothing listens after close');
});
