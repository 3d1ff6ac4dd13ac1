// Issue 23 items 7 and 9 through HTTP, against one server that trusts 127.0.0.1 as its proxy and
// allows 5 failed authentications per client address and minute:
// - X-Forwarded-Host / -Proto shape the Segment settings document only from a trusted proxy
//   (requests from 127.0.0.2 stand for any other client), and the document is private to caches;
// - failed authentications are limited per client address (X-Forwarded-For believed only from the
//   proxy): past the limit an unknown key is 429 without touching the database, while cached keys
//   and sessions still work and other addresses are not affected;
// - a refused credential is answered from the headers, before (and without) the body.
import t from 'tap';
import pg from 'pg';
import net from 'node:net';
import http from 'node:http';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startServer, call, createAppFixture, createOrg } from './helpers/server.js';
import { dbEnv, ownDatabase } from './helpers/db.js';

const dbUrl = await ownDatabase(t);
const s = await startServer([], { HEADWATER_TRUSTED_PROXIES: '10.20.0.0/16, 127.0.0.1', HEADWATER_AUTH_FAILURE_LIMIT: '5', ...dbEnv(dbUrl) });
t.teardown(() => s.close());
const pool = dbUrl ? new pg.Pool({ connectionString: dbUrl, max: 1 })
  : s.dataDir ? new pg.Pool({ host: join(s.dataDir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 }) : undefined;
if (pool) t.teardown(() => pool.end());
const { hostname, port } = new URL(s.url);

interface Got { status: number; headers: http.IncomingHttpHeaders; body: any }
/** A request from `from` (a loopback address of this machine) with the headers given. */
function req(path: string, o: { from?: string; headers?: Record<string, string>; method?: string } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: hostname, port, path, method: o.method ?? 'GET', headers: o.headers, localAddress: o.from ?? '127.0.0.1', agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: any;
        try { body = JSON.parse(text); } catch { body = text; }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    r.on('error', reject);
    r.end();
  });
}
const rndKey = (p = 'hwk') => `${p}_${randomBytes(32).toString('base64url')}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

// ------------------------------------------------------------------ Segment settings (item 7)

t.test('the Segment settings document: forwarded host only from a trusted proxy, private to caches', async (t) => {
  const f = await createAppFixture(s);
  const wk = await call(s.url, 'POST', `/v1/sources/${f.source.id}/write-keys`, { token: f.admin });
  t.equal(wk.status, 201);
  const path = `/segment/v1/projects/${wk.body.data.writeKey}/settings`;
  const own = `${hostname}:${port}`;
  const forged = { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
  const io = (r: Got) => r.body.integrations['Segment.io'];

  const fromClient = await req(path, { from: '127.0.0.2', headers: forged });
  t.equal(fromClient.status, 200);
  t.equal(io(fromClient).apiHost, `${own}/segment/v1`, 'a client\'s X-Forwarded-Host is not echoed');
  t.equal(io(fromClient).protocol, 'http', 'nor its X-Forwarded-Proto');
  t.match(fromClient.headers['cache-control'], /\bprivate\b/, 'Cache-Control: private');

  const fromProxy = await req(path, { headers: { 'x-forwarded-host': 'hw.example.com', 'x-forwarded-proto': 'https' } });
  t.equal(io(fromProxy).apiHost, 'hw.example.com/segment/v1', 'the trusted proxy\'s forwarded host is used');
  t.equal(io(fromProxy).protocol, 'https');
  t.match(fromProxy.headers['cache-control'], /\bprivate\b/);

  const chain = await req(path, { headers: { 'x-forwarded-host': 'hw.example.com:8443, lb.internal', 'x-forwarded-proto': 'https, http' } });
  t.equal(io(chain).apiHost, 'hw.example.com:8443/segment/v1', 'of a chain, the client-facing (first) host');
  t.equal(io(chain).protocol, 'https');

  for (const bad of ['evil.example/x?y=', 'a b', '<script>', 'evil.example@x']) {
    const r = await req(path, { headers: { 'x-forwarded-host': bad } });
    t.equal(io(r).apiHost, `${own}/segment/v1`, `a malformed forwarded host (${bad}) falls back to Host`);
  }
});

// ------------------------------------------------------------------ failed authentication (item 9)

t.test('failed authentications are limited per client address; valid credentials still work', async (t) => {
  const org = await createOrg(s);
  const client = { 'x-forwarded-for': '203.0.113.5' };
  for (let i = 0; i < 5; i++) {
    const r = await req('/v1/users/me', { headers: { ...client, ...bearer(rndKey()) } });
    t.same([r.status, r.body.error.code], [401, 'invalid_key'], `unknown key ${i + 1} of 5: 401`);
  }
  const limited = await req('/v1/users/me', { headers: { ...client, ...bearer(rndKey()) } });
  t.same([limited.status, limited.body.error.code], [429, 'rate_limited'], 'the next unknown key: 429');
  t.ok(Number(limited.headers['retry-after']) >= 1, `with Retry-After (${limited.headers['retry-after']})`);
  const forged = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from('{"iss":"headwater"}').toString('base64url')}.x`;
  t.equal((await req('/v1/users/me', { headers: { ...client, ...bearer(forged) } })).status, 429, 'an invalid session too');

  const me = await req('/v1/users/me', { headers: { ...client, ...bearer(org.apiKey) } });
  t.same([me.status, me.body.data.scheme], [200, 'apiKey'], 'a known (cached) key from the same address works');
  const session = await req('/v1/users/me', { headers: { ...client, ...bearer(org.sessions.admin) } });
  t.same([session.status, session.body.data.scheme], [200, 'session'], 'a valid session from the same address works');

  const other = await req('/v1/users/me', { headers: { 'x-forwarded-for': '203.0.113.6', ...bearer(rndKey()) } });
  t.equal(other.status, 401, 'another client behind the same proxy has its own allowance');
  const v6 = await req('/v1/users/me', { headers: { 'x-forwarded-for': '2001:db8:1:2::1', ...bearer(rndKey()) } });
  t.equal(v6.status, 401, 'an IPv6 client too');
});

t.test('X-Forwarded-For from an untrusted peer does not buy a fresh allowance', async (t) => {
  for (let i = 0; i < 5; i++) {
    const r = await req('/v1/users/me', { from: '127.0.0.3', headers: { 'x-forwarded-for': `198.51.100.${i}`, ...bearer(rndKey('hwd')) } });
    t.equal(r.status, 401, `failure ${i + 1}`);
  }
  const r = await req('/v1/users/me', { from: '127.0.0.3', headers: { 'x-forwarded-for': '198.51.100.200', ...bearer(rndKey('hwd')) } });
  t.equal(r.status, 429, 'the peer address is counted, whatever it forwards');
});

// Servers mode only: embedded PGlite is a single session, so a lock taken over its socket holds no
// other client back and could prove nothing.
t.test('a limited address costs no database query', { skip: !dbUrl && 'embedded PGlite: a lock cannot hold the server back' }, async (t) => {
  // While this transaction holds the credentials table, any key lookup would wait for it.
  const c = await pool!.connect();
  await c.query('BEGIN');
  await c.query('LOCK TABLE credentials IN ACCESS EXCLUSIVE MODE');
  let controlDone = false;
  const control = req('/v1/users/me', { headers: { 'x-forwarded-for': '203.0.113.77', ...bearer(rndKey()) } }).then((r) => { controlDone = true; return r; });
  try {
    const t0 = Date.now();
    for (let i = 0; i < 20; i++) {
      const r = await req('/v1/users/me', { headers: { 'x-forwarded-for': '203.0.113.5', ...bearer(rndKey()) } });
      t.equal(r.status, 429, `unknown key ${i + 1} from the limited address: 429 with the table locked`);
    }
    t.ok(Date.now() - t0 < 5000, `answered at once (${Date.now() - t0} ms for 20)`);
    t.notOk(controlDone, 'a lookup from an address under its limit waits for the table: the lock holds');
  } finally {
    await c.query('COMMIT');
    c.release();
  }
  t.equal((await control).status, 401, 'and is answered once it is free');
});

// ------------------------------------------------------------------ credential before body (item 9)

/** Sends a request head and the first `sent` bytes of a `length`-byte body, never the rest; resolves
 * with the status line of the answer, or 'no answer' after `waitMs`. */
function headOnly(method: string, path: string, headers: Record<string, string>, length: number, sent: Buffer, waitMs = 5000): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), hostname);
    let got = '';
    const timer = setTimeout(() => { sock.destroy(); resolve('no answer'); }, waitMs);
    sock.on('data', (d) => {
      got += d.toString('latin1');
      const eol = got.indexOf('\r\n');
      if (eol !== -1) { clearTimeout(timer); sock.destroy(); resolve(got.slice(0, eol)); }
    });
    sock.on('error', () => {});
    const lines = [`${method} ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, `Content-Length: ${length}`, 'Content-Type: application/json',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    sock.write(lines.join('\r\n') + '\r\n\r\n');
    sock.write(sent);
  });
}

t.test('a bad credential with a large body is answered 401 before the body is read', async (t) => {
  const org = await createOrg(s);
  const start = Buffer.from('{"data":{"name":"x"');
  const cases: Array<[string, string, string, string]> = [
    ['no bearer', 'POST', '/v1/apps', ''],
    ['malformed bearer', 'POST', '/v1/apps', 'Bearer garbage'],
    ['unknown key (a lookup)', 'POST', '/v1/track', `Bearer ${rndKey()}`],
    ['unknown deploy key on a streamed artifact upload', 'PUT', `/v1/artifacts/sha256:${'0'.repeat(64)}?kind=bundle`, `Bearer ${rndKey('hwd')}`],
    ['session signed by another key', 'PATCH', '/v1/settings', `Bearer ${org.sessions.admin.slice(0, -4)}AAAA`],
    ['API key on a dashboard route', 'POST', '/v1/apps', `Bearer ${org.apiKey}`],
    ['deploy key outside its scope', 'POST', '/v1/apps', `Bearer ${org.deployKey}`],
  ];
  for (const [what, method, path, auth] of cases) {
    const line = await headOnly(method, path, auth ? { authorization: auth, 'x-forwarded-for': `192.0.2.${cases.findIndex((c) => c[0] === what)}` } : {}, 900_000, start);
    t.match(line, /^HTTP\/1\.1 (401|403) /, `${what}: refused with 900 kB announced and ${start.length} bytes sent (${line})`);
  }
  // A valid credential still reads its (large) body.
  const padded = `{"data":{"name":"big-body"}${' '.repeat(600_000)}}`;
  const ok = await call(s.url, 'POST', '/v1/apps', { token: org.sessions.admin, raw: padded, contentType: 'application/json' });
  t.equal(ok.status, 201, 'a valid session with a 600 kB body is served');
});
