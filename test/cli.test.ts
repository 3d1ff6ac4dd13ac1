// The `headwater` command as a user runs it: serve (operator token generated and printed once),
// `org create`, the embedded data-dir lock, `serve --help`, and concurrent start-ups against one
// PostgreSQL applying each migration once.
import t from 'tap';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { call } from './helpers/server.js';
import { BIN, serveBin, stopBin, type Proc } from './helpers/serve.js';

const run = promisify(execFile);

const serve = serveBin;
const stop = stopBin;

t.test('serve generates the operator token once; org create prints credentials', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = await serve(dir, {}, { seed: false }); // a first start from nothing
  const m = /operator token \(shown once[^)]*\): (hwo_\S+)/.exec(first.out);
  t.ok(m, 'first start prints the generated operator token');
  const token = m![1]!;
  t.equal(statSync(join(dir, 'operator-token')).mode & 0o777, 0o600, 'token file is private');
  t.equal(readFileSync(join(dir, 'operator-token'), 'utf8').trim(), token);

  // A second process on the same embedded data directory is refused with a clear message.
  await t.rejects(serve(dir, { CLICKHOUSE_URL: '' }), /in use by process/);

  const { stdout } = await run(process.execPath, [BIN, 'org', 'create', '--name', 'cli-org', '--url', first.url, '--token', token]);
  const created = JSON.parse(stdout).data;
  t.equal(created.org.name, 'cli-org');
  t.match(created.apiKey, /^hwk_/);
  const me = await call(first.url, 'GET', '/v1/users/me', { token: created.sessions.admin });
  t.equal(me.body.data.orgId, created.org.id);

  // Without --token the CLI reads the generated token from the data directory.
  const again = await run(process.execPath, [BIN, 'org', 'create', '--name', 'cli-org-2', '--url', first.url, '--data-dir', dir]);
  t.equal(JSON.parse(again.stdout).data.org.name, 'cli-org-2');

  await t.rejects(run(process.execPath, [BIN, 'org', 'create', '--name', 'x', '--url', first.url, '--token', 'hwo_wrong']), 'wrong token fails');
  await stop(first);

  const second = await serve(dir);
  t.notMatch(second.out, /operator token/, 'not printed again on a later start');
  const r = await call(second.url, 'GET', '/v1/users/me', { token: created.apiKey });
  t.equal(r.status, 200, 'data survives a restart');
  await stop(second);
});

t.test('serve --help lists every setting with its default', async (t) => {
  const { stdout } = await run(process.execPath, [BIN, 'serve', '--help']);
  for (const name of ['PORT', 'HEADWATER_DATA_DIR', 'HEADWATER_OPERATOR_TOKEN', 'DATABASE_URL', 'NATS_URL', 'CLICKHOUSE_URL',
    'HEADWATER_WORKERS', 'HEADWATER_BODY_LIMIT', 'HEADWATER_ARTIFACT_LIMIT', 'HEADWATER_WEBHOOK_ALLOW_PRIVATE', 'SMTP_URL']) {
    t.match(stdout, name);
  }
  t.match(stdout, '1048576');
});

t.test('unknown command and option exit non-zero', async (t) => {
  await t.rejects(run(process.execPath, [BIN, 'frobnicate']));
  await t.rejects(run(process.execPath, [BIN, 'serve', '--no-such-flag']));
});

t.test('processes starting at once against one PostgreSQL apply each migration once', async (t) => {
  const url = process.env.DATABASE_URL;
  if (!url) { t.plan(0, 'DATABASE_URL not set'); return; }
  // A fresh database so that the migrations really run concurrently.
  const dbName = `hw_mig_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = new URL(url); dbUrl.pathname = `/${dbName}`;
  const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), 'hw-mig-')));
  t.teardown(async () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await admin.end();
  });
  const procs = await Promise.all(dirs.map((d) => serve(d, { DATABASE_URL: dbUrl.toString(), HEADWATER_SECRET_KEY: 'shared-test-key' })));
  const c = new pg.Client({ connectionString: dbUrl.toString() });
  await c.connect();
  const r = await c.query(`SELECT version, count(*)::int AS n FROM headwater_migrations WHERE store = 'postgres' GROUP BY version`);
  await c.end();
  t.ok(r.rows.length >= 1);
  for (const row of r.rows) t.equal(row.n, 1, `postgres migration ${row.version} applied once`);
  for (const p of procs) t.equal((await call(p.url, 'GET', '/health/ready')).status, 200);
  await Promise.all(procs.map((p) => stop(p)));
});
