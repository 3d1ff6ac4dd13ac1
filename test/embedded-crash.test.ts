// Embedded mode answers a track call once Postgres committed it, before its event reaches chDB
// (pipeline/landing.ts). A `serve` process killed (SIGKILL) while answered events still wait for
// their ClickHouse insert, then started again on the same data directory, must list every answered
// event exactly once. The kill lands inside a long event linger (--event-linger-ms), so answered
// events are certainly not in ClickHouse yet; the test checks that too, so it cannot pass vacuously.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, poll } from './helpers/server.js';
import { BIN, NODE_ARGS } from './helpers/serve.js';

const TOTAL = 300;
const CONCURRENCY = 20;
const LINGER_MS = 20_000;

interface Served { child: ChildProcess; url: string; err: () => string }

/** `serve` on the embedded stores of `dataDir` (no server URLs inherited); resolves once listening. */
function serve(dataDir: string, operatorToken: string, secretKey: string, extra: string[] = []): Promise<Served> {
  const env: NodeJS.ProcessEnv = { ...process.env, HEADWATER_OPERATOR_TOKEN: operatorToken, HEADWATER_SECRET_KEY: secretKey, HEADWATER_LOG_LEVEL: 'info' };
  for (const k of ['DATABASE_URL', 'NATS_URL', 'CLICKHOUSE_URL', 'PORT', 'HEADWATER_DATA_DIR']) delete env[k];
  const child = spawn(process.execPath, [...NODE_ARGS, BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...extra],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (b) => { err += b; if (err.length > 100_000) err = err.slice(-50_000); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`serve not ready in 60 s\n${err.slice(-3000)}`)); }, 60_000);
    child.stdout!.on('data', (b) => {
      out += b;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1]!, err: () => err + out }); }
    });
    child.once('exit', (code, sig) => { clearTimeout(timer); reject(new Error(`serve exited (${code ?? sig})\n${err.slice(-3000)}`)); });
  });
}

const exited = (c: ChildProcess) => new Promise<void>((r) => { if (c.exitCode !== null || c.signalCode !== null) r(); else c.once('exit', () => r()); });

t.test('answered events survive a crash before they reach ClickHouse', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hw-ecrash-'));
  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const secretKey = randomBytes(32).toString('hex');
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) { c.kill('SIGKILL'); await exited(c); }
    rmSync(dataDir, { recursive: true, force: true });
  });

  const first = await serve(dataDir, operatorToken, secretKey, ['--event-linger-ms', String(LINGER_MS)]);
  children.push(first.child);
  const org = await call(first.url, 'POST', '/v1/orgs', { token: operatorToken, body: { data: { name: `ecrash-${randomBytes(4).toString('hex')}` } } });
  t.equal(org.status, 201, 'org created');
  const admin: string = org.body.data.sessions.admin;
  const apiKey: string = org.body.data.apiKey;
  const app = await call(first.url, 'POST', '/v1/apps', { token: admin, body: { data: { name: 'crash-app' } } });
  t.equal(app.status, 201, 'app created');
  const srcs = await call(first.url, 'GET', `/v1/apps/${app.body.data.id}/sources`, { token: admin });
  const sourceId: string = srcs.body.data[0].id;

  // Every call answered 201 while the writer lingers: none of their events is in ClickHouse yet.
  const answered = new Map<string, string>(); // messageId -> event id
  const failures: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < TOTAL) {
      const i = next++;
      const messageId = `ec-${i}`;
      const r = await call(first.url, 'POST', '/v1/track', { token: apiKey, body: { data: {
        sourceId, messageId, event: 'Crash Test', identifiers: { userId: `u-${i % 25}` }, properties: { i },
      } } });
      if (r.status === 201) answered.set(messageId, r.body.data.id);
      else failures.push(`${messageId}: ${r.status} ${r.text.slice(0, 200)}`);
    }
  }));
  t.same(failures, [], 'every call is answered 201');
  const before = await call(first.url, 'GET', '/v1/events?limit=100', { token: admin });
  t.equal(before.status, 200);
  t.equal(before.body.data.length, 0, 'none of the answered events is in ClickHouse yet (they wait for the linger)');

  first.child.kill('SIGKILL');
  await exited(first.child);
  t.comment(`serve killed with ${answered.size} answered events in hand`);

  const second = await serve(dataDir, operatorToken, secretKey);
  children.push(second.child);
  t.match(second.err(), /landed events answered before the last stop/, 'the restart lands them again');

  type Ev = { id: string; messageId: string | null };
  const listAll = async (): Promise<Ev[]> => {
    const all: Ev[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 50; pages++) {
      const r: { status: number; text: string; body: any } = await call(second.url, 'GET', `/v1/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token: admin });
      if (r.status !== 200) throw new Error(`list: ${r.status} ${r.text.slice(0, 200)}`);
      all.push(...(r.body.data as Ev[]));
      cursor = r.body.meta?.nextCursor ?? null;
      if (!cursor) break;
    }
    return all;
  };
  const listed = await poll(listAll, (l) => l.length >= answered.size, 30_000, 300);
  const ids = new Map<string, number>();
  for (const e of listed) ids.set(e.id, (ids.get(e.id) ?? 0) + 1);
  const missing = [...answered].filter(([, id]) => !ids.has(id));
  t.same(missing.slice(0, 5), [], `every answered event is listed (${missing.length} missing)`);
  t.same([...ids].filter(([, n]) => n > 1).slice(0, 5), [], 'no event is listed twice');
  t.equal(listed.length, answered.size, 'nothing else is listed');
  t.ok(listed.every((e) => e.messageId !== null && answered.get(e.messageId) === e.id), 'each listed event is the answered one of its messageId');

  // A replay after the restart answers the original event.
  const replay = await call(second.url, 'POST', '/v1/track', { token: apiKey, body: { data: {
    sourceId, messageId: 'ec-0', event: 'Crash Test', identifiers: { userId: 'u-0' },
  } } });
  t.equal(replay.status, 200, 'a replay is answered 200');
  t.equal(replay.body.data.id, answered.get('ec-0'), 'with the original event');

  second.child.kill('SIGTERM');
  await exited(second.child);
});
