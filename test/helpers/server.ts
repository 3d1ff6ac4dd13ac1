// Test harness: starts a real headwater service in this test process (embedded stores unless
// DATABASE_URL / NATS_URL / CLICKHOUSE_URL are set), or reuses a running one when
// HEADWATER_TEST_URL (+ HEADWATER_OPERATOR_TOKEN) is set. Every test isolates itself by creating
// its own org with a random name.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { seedDataDir } from './seed.js';
import { deleteStreams } from './streams.js';
import { ownStreamPrefix } from './streams.js';

export interface TestServer {
  url: string;
  operatorToken: string;
  dataDir?: string;
  /** The Postgres database it uses, when not embedded. */
  databaseUrl?: string;
  close(): Promise<void>;
}

export interface Res<T = any> { status: number; body: T; text: string; headers: Headers }

export async function startServer(extraArgs: string[] = [], env: Record<string, string | undefined> = {}): Promise<TestServer> {
  if (process.env.HEADWATER_TEST_URL && extraArgs.length === 0 && Object.keys(env).length === 0) {
    const token = process.env.HEADWATER_OPERATOR_TOKEN;
    if (!token) throw new Error('HEADWATER_TEST_URL needs HEADWATER_OPERATOR_TOKEN');
    return { url: process.env.HEADWATER_TEST_URL.replace(/\/$/, ''), operatorToken: token, close: async () => {} };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'hw-test-'));
  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const { loadConfig } = await import('../../api/config.js');
  const { createLogger } = await import('../../lib/log.js');
  const { startService } = await import('../../api/service.js');
  const prefix = `t${randomBytes(5).toString('hex')}`;
  const config = loadConfig(['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--operator-token', operatorToken, ...extraArgs],
    // With a shared NATS server, each test server gets streams of its own: its events must land in
    // its own embedded ClickHouse, not in another test process's.
    { ...process.env, HEADWATER_LOG_LEVEL: process.env.HEADWATER_LOG_LEVEL ?? 'warn', HEADWATER_STREAM_PREFIX: prefix, ...env });
  // An embedded store starts from a migrated copy, unless the test brings a directory with data.
  if (!config.databaseUrl) await seedEmbedded(config.dataDir);
  const svc = await startService(config, createLogger(config.logLevel));
  // Streams of its own are deleted with it; streams a test named (shared with a worker) are the test's.
  const own = config.natsUrl && env.HEADWATER_STREAM_PREFIX === undefined ? config.natsUrl : undefined;
  return {
    url: svc.url, operatorToken, dataDir, databaseUrl: config.databaseUrl ?? undefined,
    async close() {
      await svc.close();
      rmSync(dataDir, { recursive: true, force: true });
      if (own) await deleteStreams(own, prefix);
    },
  };
}

/**
 * Fills an empty (or missing) data directory with migrated embedded stores (helpers/seed.ts);
 * a directory that holds anything is left alone.
 */
export async function seedEmbedded(dataDir: string): Promise<void> {
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) return;
  await seedDataDir(dataDir, async (dir) => {
    const { loadConfig } = await import('../../api/config.js');
    const { createLogger } = await import('../../lib/log.js');
    const { startService } = await import('../../api/service.js');
    const c = loadConfig(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--operator-token', `hwo_${randomBytes(24).toString('base64url')}`],
      { HEADWATER_LOG_LEVEL: 'warn', HEADWATER_STREAM_PREFIX: `s${randomBytes(5).toString('hex')}` });
    await (await startService(c, createLogger(c.logLevel))).close();
  });
}

export interface CallOpts { token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; contentType?: string }

export async function call<T = any>(base: string, method: string, path: string, o: CallOpts = {}): Promise<Res<T>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  let body: string | Buffer | undefined;
  if (o.raw !== undefined) { body = o.raw; if (o.contentType) headers['content-type'] = o.contentType; }
  else if (o.body !== undefined) { body = JSON.stringify(o.body); headers['content-type'] = o.contentType ?? 'application/json'; }
  const res = await fetch(base + path, { method, headers, body: body as BodyInit | undefined });
  const text = await res.text();
  let parsed: any = undefined;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

export interface OrgCreds {
  org: { id: string; name: string; createdAt: string };
  apiKey: string; deployKey: string; pipelineKey: string;
  sessions: { admin: string; member: string };
}

export const randomName = (p = 'org') => `${p}-${randomBytes(6).toString('hex')}`;

export async function createOrg(s: TestServer, name = randomName()): Promise<OrgCreds> {
  const r = await call(s.url, 'POST', '/v1/orgs', { token: s.operatorToken, body: { data: { name } } });
  if (r.status !== 201) throw new Error(`org create failed: ${r.status} ${r.text}`);
  return r.body.data;
}

// ---------------------------------------------------------------- added helpers (auth/apps/http tests)

/** Minimal assertion surface of a tap Test, so helpers need no runtime import of tap. */
export interface Asserter {
  equal(found: any, wanted: any, ...rest: any[]): unknown;
  ok(value: any, ...rest: any[]): unknown;
  type(found: any, type: string, ...rest: any[]): unknown;
}

/**
 * Asserts an error envelope: exact status and code, a non-empty message, and `meta.requestId`
 * equal to the `x-request-id` header. `messageIncludes` checks the message names a field.
 */
export function expectError(t: Asserter, r: Res, status: number, code: string, what = '', messageIncludes?: string): void {
  const p = what ? `${what}: ` : '';
  t.equal(r.status, status, `${p}status ${status} (body ${r.text.slice(0, 300)})`);
  t.equal(r.body?.error?.code, code, `${p}error.code ${code}`);
  t.ok(typeof r.body?.error?.message === 'string' && r.body.error.message.length > 0, `${p}error.message is a non-empty string`);
  const rid = r.headers.get('x-request-id');
  t.ok(rid, `${p}x-request-id header present`);
  t.equal(r.body?.meta?.requestId, rid, `${p}meta.requestId equals x-request-id`);
  if (messageIncludes !== undefined) {
    t.ok(String(r.body?.error?.message ?? '').includes(messageIncludes), `${p}message "${r.body?.error?.message}" names ${messageIncludes}`);
  }
}

export interface RawRes { status: number; headers: Record<string, string | string[] | undefined>; text: string; body: any; writeError?: Error }

export interface RawReqOpts {
  method?: string;
  headers?: Record<string, string | number>;
  /** Chunks written one after another (a single buffer or string is one chunk). */
  chunks?: Array<string | Buffer>;
  /** Do not end the request after the chunks (for aborted-request tests); destroy after `destroyAfterMs`. */
  destroyAfterMs?: number;
}

/**
 * A request through node:http, for what fetch cannot do: explicit or chunked framing, answers that
 * arrive while the body is still being sent, and clients that vanish mid-request. Resolves with the
 * answer; write errors after the answer arrived (the server dropped the rest) are recorded, not thrown.
 * With `destroyAfterMs`, resolves with status 0 once the request was destroyed.
 */
export async function rawRequest(base: string, path: string, o: RawReqOpts = {}): Promise<RawRes> {
  const { request } = await import('node:http');
  const u = new URL(base + path);
  return new Promise<RawRes>((resolve, reject) => {
    let writeError: Error | undefined;
    let settled = false;
    let abandon: NodeJS.Timeout | undefined;
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: o.method ?? 'POST', headers: o.headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('error', () => {});
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: any;
        try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
        settled = true;
        // Answered: a request still held open for `destroyAfterMs` has nothing left to show, and its
        // timer would keep the test process alive after the last test.
        if (abandon) { clearTimeout(abandon); req.destroy(); }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body, writeError });
      });
    });
    req.on('error', (err) => {
      writeError = err;
      if (o.destroyAfterMs !== undefined) { if (!settled) { settled = true; resolve({ status: 0, headers: {}, text: '', body: undefined, writeError: err }); } return; }
      // The answer may still come (server answered early and reset): give it a moment.
      setTimeout(() => { if (!settled) { settled = true; reject(err); } }, 200);
    });
    const chunks = o.chunks ?? [];
    const writeAll = async () => {
      for (const c of chunks) {
        if (req.destroyed || settled) return;
        const okToContinue = req.write(c);
        if (!okToContinue) await new Promise<void>((r) => { const done = () => { req.off('drain', done); req.off('close', done); r(); }; req.on('drain', done); req.on('close', done); });
      }
      if (o.destroyAfterMs !== undefined) {
        if (chunks.length === 0) req.end(); // a complete bodiless request, abandoned before its answer
        if (settled) { req.destroy(); return; }
        abandon = setTimeout(() => {
          req.destroy();
          setTimeout(() => { if (!settled) { settled = true; resolve({ status: 0, headers: {}, text: '', body: undefined, writeError }); } }, 20);
        }, o.destroyAfterMs);
        return;
      }
      if (!req.destroyed) req.end();
    };
    writeAll().catch(() => {});
  });
}

/**
 * Signs a session JWT the way the built-in issuer does, with the master key from the data dir of
 * an embedded test server (or with `key` when given). Undefined when no key is reachable
 * (HEADWATER_TEST_URL mode), so callers can skip.
 */
export async function signSession(s: TestServer, claims: Record<string, unknown>, o: { key?: Uint8Array; issuer?: string; expiresAt?: number; subject?: string } = {}): Promise<string | undefined> {
  const { SignJWT } = await import('jose');
  let key = o.key;
  if (!key) {
    if (!s.dataDir) return undefined;
    const { readFileSync, existsSync } = await import('node:fs');
    const { createHash, hkdfSync } = await import('node:crypto');
    const file = join(s.dataDir, 'secret-key');
    if (!existsSync(file)) return undefined;
    const master = readFileSync(file, 'utf8').trim();
    const ikm = createHash('sha256').update(master).digest();
    key = new Uint8Array(hkdfSync('sha256', ikm, Buffer.alloc(0), 'headwater/session-jwt', 32));
  }
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer(o.issuer ?? 'headwater')
    .setSubject(o.subject ?? 'usr_test').setIssuedAt(now - 7200).setExpirationTime(o.expiresAt ?? now + 3600).sign(key);
}

// ---------------------------------------------------------------- added helpers (ingestion tests)

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Calls `fn` until `done` holds for its value or `timeoutMs` passed; returns the last value either
 * way, so the caller asserts on it (a timeout shows up as a failed assertion, not a throw).
 */
export async function poll<T>(fn: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 5000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() >= until) return v;
    await sleep(everyMs);
  }
}

/** `poll` for a condition with no value to keep: true once `cond` holds, false if it did not in time. */
export const until = (cond: () => boolean | Promise<boolean>, timeoutMs = 5000, everyMs = 100): Promise<boolean> =>
  poll(async () => cond(), (v) => v, timeoutMs, everyMs);

/** Waits until this machine's clock is past the instant `iso` (ms), so an instant stored next is later. */
export const clockPast = (iso: string): Promise<boolean> => until(() => Date.now() > Date.parse(iso), 1000, 1);

/**
 * The sum of a metric's samples on GET /metrics (operator token) whose labels include `labels`
 * (e.g. `{ kind: 'outbox' }`); 0 when it has none.
 */
export async function metric(s: TestServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const r = await call(s.url, 'GET', '/metrics', { token: s.operatorToken });
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of r.text.split('\n')) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m && m[1] === name && want.every((w) => (m[2] ?? '').split(',').includes(w))) sum += Number(m[3]);
  }
  return sum;
}

/** An org's app (created with the admin session), its first-party `api` source and the keys to use. */
export interface AppFixture { org: OrgCreds; app: any; source: any; key: string; admin: string }

export async function createAppFixture(s: TestServer, o: { org?: OrgCreds; name?: string; environment?: 'development' | 'production' } = {}): Promise<AppFixture> {
  const org = o.org ?? await createOrg(s);
  const body: Record<string, unknown> = { name: o.name ?? randomName('app') };
  if (o.environment) body.environment = o.environment;
  const r = await call(s.url, 'POST', '/v1/apps', { token: org.sessions.admin, body: { data: body } });
  if (r.status !== 201) throw new Error(`app create failed: ${r.status} ${r.text}`);
  const srcs = await call(s.url, 'GET', `/v1/apps/${r.body.data.id}/sources`, { token: org.sessions.admin });
  if (srcs.status !== 200 || srcs.body.data.length !== 1) throw new Error(`app sources: ${srcs.status} ${srcs.text}`);
  return { org, app: r.body.data, source: srcs.body.data[0], key: org.apiKey, admin: org.sessions.admin };
}

/** A random id with a readable prefix, for identifiers and messageIds. */
export const uid = (p = 'x') => `${p}-${randomBytes(6).toString('hex')}`;

/** POST /v1/identify through the fixture's source. */
export const identifyCall = (s: TestServer, f: AppFixture, data: Record<string, unknown>, token = f.key) =>
  call(s.url, 'POST', '/v1/identify', { token, body: { data: { sourceId: f.source.id, ...data } } });

/** POST /v1/batch of `calls` through the fixture's source (or `sourceId`). */
export const batchCall = (s: TestServer, f: AppFixture, calls: unknown[], sourceId = f.source.id) =>
  call(s.url, 'POST', '/v1/batch', { token: f.key, body: { data: { sourceId, calls } } });

/** A request as the fixture org's admin, with `data` (when given) as the body's `data`. */
export const adminCall = (s: TestServer, f: AppFixture, method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token: f.admin, body: data === undefined ? undefined : { data } });

/** POST /v1/track through the fixture's source, with a fresh messageId unless `data` names one. */
export const trackCall = (s: TestServer, f: AppFixture, data: Record<string, unknown>, token = f.key) =>
  call(s.url, 'POST', '/v1/track', { token, body: { data: { sourceId: f.source.id, messageId: uid('msg'), ...data } } });

/** The event name of `markerLanded`, which callers leave out of their counts. */
export const MARKER_EVENT = 'test_marker';

/**
 * Tracks a `test_marker` event through `f` (for a profile of its own) and polls until GET /v1/events
 * lists it. Accepted events land in order, so those accepted before it (re-emitted copies of
 * replays included) have landed by then. Under the strict policy the name must be in the catalog.
 */
export async function markerLanded(s: TestServer, f: AppFixture, timeoutMs = 15_000): Promise<boolean> {
  const r = await trackCall(s, f, { identifiers: { userId: uid('marker') }, event: MARKER_EVENT });
  if (r.status !== 201) throw new Error(`marker track: ${r.status} ${r.text}`);
  const q = new URLSearchParams({ event: MARKER_EVENT, profileId: r.body.data.profileId });
  return until(async () => (await call(s.url, 'GET', `/v1/events?${q}`, { token: f.admin })).body?.data?.length === 1, timeoutMs, 50);
}

/**
 * `headwater worker` in this test process (its own pools and senders) on the data `env` names, with
 * `flags` as on its command line; closed, and its scratch directory removed, at the test's end.
 */
export async function startWorker(t: { teardown(fn: () => unknown): void }, flags: string[], env: Record<string, string> = {}): Promise<void> {
  const { loadConfig } = await import('../../api/config.js');
  const { createLogger } = await import('../../lib/log.js');
  const { runWorker } = await import('../../cli/worker.js');
  const dir = mkdtempSync(join(tmpdir(), 'hw-worker-'));
  // Streams of a prefix made up here are deleted after the worker closed (a caller's are its own).
  const prefix = env.HEADWATER_STREAM_PREFIX ?? ownStreamPrefix(t, 't');
  const config = loadConfig(['--data-dir', dir, '--workers', '1', ...flags],
    { ...process.env, HEADWATER_LOG_LEVEL: 'warn', ...env, HEADWATER_STREAM_PREFIX: prefix });
  const worker = await runWorker(config, createLogger(config.logLevel));
  t.teardown(async () => { await worker.close(); rmSync(dir, { recursive: true, force: true }); });
}
