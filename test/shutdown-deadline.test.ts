// A graceful stop is bounded: `headwater serve` or `headwater worker` whose NATS server stops
// answering (here a TCP proxy in front of the real one that stops forwarding) names the part it
// waits for and exits with status 1 after HEADWATER_SHUTDOWN_SECONDS instead of hanging until a
// supervisor kills it. The same process with NATS answering stops with status 0. Needs NATS_URL
// and DATABASE_URL (the servers pass).
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { createServer, connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, NODE_ARGS, serveBin, stopBin } from './helpers/serve.js';
import { poll } from './helpers/server.js';
import { call } from './helpers/server.js';

const natsUrl = process.env.NATS_URL;
if (!natsUrl || !process.env.DATABASE_URL) {
  t.plan(0, 'NATS_URL or DATABASE_URL not set');
} else {
  const upstream = new URL(natsUrl);

  /** A proxy to NATS that can stop forwarding while keeping its connections open. */
  async function proxy() {
    const pairs: Array<[Socket, Socket]> = [];
    const server = createServer((down) => {
      const up = connect(Number(upstream.port || 4222), upstream.hostname);
      down.pipe(up); up.pipe(down);
      down.on('error', () => {}); up.on('error', () => {});
      pairs.push([down, up]);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    return {
      url: `nats://127.0.0.1:${port}`,
      freeze() { for (const [a, b] of pairs) { a.unpipe(b); b.unpipe(a); a.pause(); b.pause(); } },
      close() { for (const [a, b] of pairs) { a.destroy(); b.destroy(); } server.close(); },
    };
  }

  // The parts whose close talks to NATS: with it frozen, whichever of them closes first stalls.
  const NATS_PARTS = ['processing node', 'suppressions', 'streams', 'nats'];

  /** The deadline's line names a part that waits on NATS as the one closing, and `nats` not closed. */
  function namesNatsParts(t: Test, printed: string) {
    const line = printed.split('\n').find((l) => l.includes('shutdown did not finish in time'));
    t.ok(line, 'the deadline is logged');
    const notClosed: unknown = line ? (JSON.parse(line.slice(line.indexOf('{'))) as { notClosed?: unknown }).notClosed : undefined;
    t.ok(Array.isArray(notClosed) && NATS_PARTS.includes(notClosed[0] as string), `the part it waited for uses NATS (${JSON.stringify(notClosed)})`);
    t.ok(Array.isArray(notClosed) && notClosed.includes('nats'), 'nats is among the parts not closed');
    t.match(printed, new RegExp(`"msg":"still closing","part":"(${NATS_PARTS.join('|')})"`), 'the part still closing is named before the deadline');
  }

  /** `headwater serve` on NATS through a proxy, with a 4 s stop deadline; ready when it returns. */
  async function servedBehindProxy(t: Test) {
    const p = await proxy();
    const dir = mkdtempSync(join(tmpdir(), 'hw-stop-'));
    t.teardown(() => { p.close(); rmSync(dir, { recursive: true, force: true }); });
    const s = await serveBin(dir, { NATS_URL: p.url, HEADWATER_SHUTDOWN_SECONDS: '4', HEADWATER_STREAM_PREFIX: `stop${process.pid}` });
    t.equal((await call(s.url, 'GET', '/health/ready')).status, 200);
    return { p, s };
  }

  t.test('a stop held by an unanswering NATS exits 1 at the deadline, naming the part', async (t) => {
    const { p, s } = await servedBehindProxy(t);
    p.freeze();
    const began = Date.now();
    const err = await stopBin(s, { ms: 30_000 }).then(() => undefined, (e: Error) => e);
    const took = Date.now() - began;
    t.ok(err, 'the stop did not end with status 0');
    t.match(err?.message ?? '', /stopped with status 1/, 'status 1, not a kill by the test');
    namesNatsParts(t, err?.message ?? '');
    t.ok(took >= 3500 && took < 20_000, `exited at the deadline (${took} ms after SIGTERM)`);
  });

  t.test('with NATS answering the same stop ends with status 0', async (t) => {
    const { p, s } = await servedBehindProxy(t);
    await t.resolves(stopBin(s, { ms: 30_000 }));
  });

  t.test('a worker whose NATS stops answering exits 1 at the deadline, naming the part', async (t) => {
    const p = await proxy();
    const dir = mkdtempSync(join(tmpdir(), 'hw-stop-'));
    const child = spawn(process.execPath, [...NODE_ARGS, BIN, 'worker', '--data-dir', dir], {
      env: { ...process.env, NATS_URL: p.url, HEADWATER_SHUTDOWN_SECONDS: '4', HEADWATER_STREAM_PREFIX: `stop${process.pid}`, HEADWATER_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let printed = '';
    child.stdout!.on('data', (b) => { printed += b; });
    child.stderr!.on('data', (b) => { printed += b; });
    t.teardown(() => { child.kill('SIGKILL'); p.close(); rmSync(dir, { recursive: true, force: true }); });
    t.ok(await poll(async () => printed, (x) => /headwater worker running/.test(x) || child.exitCode !== null, 60_000), 'started');
    t.match(printed, /headwater worker running/);
    p.freeze();
    const began = Date.now();
    // The same bounded stop as serve's: status 0 resolves, any other status rejects with the output.
    const err = await stopBin({ child, url: '', out: printed, printed: () => printed }, { ms: 30_000 }).then(() => undefined, (e: Error) => e);
    const took = Date.now() - began;
    t.match(err?.message ?? '', /stopped with status 1/, 'status 1');
    namesNatsParts(t, printed);
    t.ok(took >= 3500 && took < 20_000, `exited at the deadline (${took} ms after SIGTERM)`);
  });
}
