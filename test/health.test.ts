// Health probes: liveness, readiness with a real check per configured dependency, and 503
// dependency_unavailable naming the one that is down (exercised through a TCP proxy we cut).
import t from 'tap';
import net from 'node:net';
import { call, startServer } from './helpers/server.js';

async function reachable(port: number) {
  return new Promise<boolean>((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
    c.on('error', () => resolve(false));
  });
}

/** A TCP proxy to 127.0.0.1:target that can be cut. */
async function proxy(target: number) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.connect(target, '127.0.0.1');
    sockets.add(client); sockets.add(up);
    client.pipe(up).pipe(client);
    const end = () => { client.destroy(); up.destroy(); };
    client.on('error', end); up.on('error', end); client.on('close', end); up.on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

// One server per file (a process opens one embedded ClickHouse). When a NATS server is reachable,
// the service is pointed at it through a proxy that the last test cuts.
const natsUp = await reachable(4222);
const p = natsUp ? await proxy(4222) : undefined;
const s = await startServer([], p ? { NATS_URL: `nats://127.0.0.1:${p.port}` } : {});
t.teardown(() => s.close());

t.test('live and ready on the configured stores', async (t) => {
  const live = await call(s.url, 'GET', '/health/live');
  t.equal(live.status, 200);
  t.same(live.body.data, { status: 'ok' });
  t.equal(live.body.meta.requestId, live.headers.get('x-request-id'));
  const ready = await call(s.url, 'GET', '/health/ready');
  t.equal(ready.status, 200);
  t.equal(ready.body.data.status, 'ok');
  t.equal(ready.body.data.checks.postgres, true);
  t.equal(ready.body.data.checks.clickhouse, true);
  if (p) t.equal(ready.body.data.checks.nats, true);
  else t.notOk('nats' in ready.body.data.checks, 'no nats check without NATS_URL');
  // uWS where a build loads (Node 20 and 22 on this glibc), node:http when forced or on Node 24.
  const want = process.env.HEADWATER_FRONT_END === 'node' ? ['node:http'] : process.env.HEADWATER_FRONT_END === 'uws' ? ['uws'] : ['uws', 'node:http'];
  t.ok(want.includes(ready.body.data.frontEnd), `frontEnd is one of ${want.join(', ')} (got ${ready.body.data.frontEnd})`);
});

t.test('ready answers 503 naming nats when the NATS connection is cut', async (t) => {
  if (!p) { t.plan(0, 'no NATS server on 127.0.0.1:4222'); return; }
  await p.cut();
  const r = await call(s.url, 'GET', '/health/ready');
  t.equal(r.status, 503);
  t.equal(r.body.error.code, 'dependency_unavailable');
  t.match(r.body.error.message, /nats/);
  t.equal((await call(s.url, 'GET', '/health/live')).status, 200, 'liveness does not depend on stores');
});
