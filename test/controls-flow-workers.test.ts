// enrollment.throttle and enrollment.debounce with two `headwater serve` processes on one Postgres
// and NATS (servers mode only): both land events and run journeys, and the throttle's count and
// the pending debounced start are shared through the store, so there is no per-process drift.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { call, createAppFixture, poll, uid, type TestServer } from './helpers/server.js';
import { consenting, deployJourneys, ended, executions, fire, untilExecutions } from './helpers/journeys.js';
import { serversFromEnv, startProc, stopProc, type ChildProc } from './helpers/topology.js';
import { deleteStreams } from './helpers/streams.js';

const servers = await serversFromEnv();

{
  t.test('two processes share one throttle count and one debounced start', { skip: servers ? false : 'needs DATABASE_URL and NATS_URL (servers mode)' }, async (t) => {
    if (!servers) return;
    const prefix = `cw${randomBytes(5).toString('hex')}`;
    const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
    const env = {
      DATABASE_URL: servers.databaseUrl, NATS_URL: servers.natsUrl, CLICKHOUSE_URL: '', HEADWATER_STREAM_PREFIX: prefix,
      HEADWATER_SECRET_KEY: randomBytes(32).toString('hex'), HEADWATER_OPERATOR_TOKEN: operatorToken, HEADWATER_WORKERS: '1',
      HEADWATER_LOG_LEVEL: 'warn',
    };
    const procs: ChildProc[] = [];
    const dirs: string[] = [];
    t.teardown(async () => {
      await Promise.all(procs.map((p) => stopProc(p)));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
      await deleteStreams(servers.natsUrl, prefix);
    });
    const serve = async (): Promise<TestServer> => {
      const dir = mkdtempSync(join(tmpdir(), 'hw-controls-w-'));
      dirs.push(dir);
      const s = await startProc('serve', ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], env, /listening on (http:\/\/\S+)/, 120_000);
      procs.push(s.proc);
      return { url: s.match[1]!, operatorToken, close: () => stopProc(s.proc) };
    };
    const [a, b] = await Promise.all([serve(), serve()]);
    const fx = await createAppFixture(a);
    const admin = fx.org.sessions.admin;
    await deployJourneys(a, fx, [
      { key: 'thr', body: '', enrollment: { throttle: { limit: 5, per: '3650d' } } },
      { key: 'deb', body: `await ctx.traits.set('n', ctx.event.properties.n);`, enrollment: { debounce: '3s' } },
    ]);
    const users = Array.from({ length: 16 }, () => uid('u'));
    await Promise.all(users.map((u) => consenting(a, fx, { userId: u })));
    const debUser = uid('d');
    const dp = await consenting(a, fx, { userId: debUser });

    // Triggers through both processes at once.
    const fired = await Promise.all(users.map((u, i) => fire(i % 2 ? a : b, fx, u, 'thr_go')));
    t.ok(fired.every((r) => r.status === 201), 'all triggers accepted');
    for (let n = 1; n <= 4; n++) t.equal((await fire(n % 2 ? a : b, fx, debUser, 'deb_go', { n })).status, 201);

    await poll(() => call(b.url, 'GET', '/v1/events?event=thr_go&limit=100', { token: admin }), (r) => r.body?.data?.length === 16, 20_000);
    const thr = await untilExecutions(b, admin, { journey: 'thr' }, (l) => l.length >= 5 && l.every(ended), 20_000);
    t.equal(thr.length, 5, 'exactly the limit started across both processes');
    const [x] = await untilExecutions(a, admin, { journey: 'deb' }, (l) => l.length === 1 && ended(l[0]), 20_000);
    t.equal(x.status, 'completed', x.error);
    const prof = await call(a.url, 'GET', `/v1/profiles/${dp.id}`, { token: admin });
    t.equal(prof.body.data.traits.n, 4, 'the latest trigger became ctx.event');
    t.equal((await executions(b, admin, { journey: 'deb' })).body.data.length, 1, 'one start for four triggers');
    t.equal((await executions(b, admin, { journey: 'thr' })).body.data.length, 5, 'still five');
  });
}
