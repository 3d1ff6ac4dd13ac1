// A server whose ingestion workers are behind sheds load: new writes are answered 503
// dependency_unavailable with Retry-After at once, and nothing of a refused request is written.
// The gate is set low (--ingest-max-wait-ms 20) and batches of 500 calls are sent without pause
// in the background, so the workers stay behind until the probe being tested is refused.
import t from 'tap';
import { call, createAppFixture, expectError, poll, startServer, uid } from './helpers/server.js';

const s = await startServer(['--ingest-max-wait-ms', '20']);
t.teardown(() => s.close());
const f = await createAppFixture(s);
await call(s.url, 'PATCH', `/v1/orgs/${f.org.org.id}`, { token: s.operatorToken, body: { data: { limits: { ratePerSecond: 1e9, burst: 1e9 } } } });

const batch = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({
  type: 'track', event: 'Shed', messageId: `${tag}-${i}`, identifiers: { userId: `u-${tag}-${i % 50}` },
}));
const send = (calls: unknown[], signal?: AbortSignal) => fetch(`${s.url}/v1/batch`, {
  method: 'POST', signal,
  headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ data: { sourceId: f.source.id, calls } }),
});

/** Keeps `lanes` batches of 500 calls in flight until stopped; every answer is 200 or 503. */
function pressure(lanes = 4) {
  let stop = false;
  const statuses: number[] = [];
  const done = Promise.all(Array.from({ length: lanes }, async (_, k) => {
    while (!stop) { const r = await send(batch(500, uid(`load${k}`))); statuses.push(r.status); await r.arrayBuffer(); }
  }));
  return { statuses, async stop() { stop = true; await done; return statuses; } };
}

t.test('behind: a new write is refused with Retry-After, and nothing of it was written', async (t) => {
  const load = pressure();
  let refused: { calls: unknown[]; res: Response; text: string } | undefined;
  const until = Date.now() + 30_000;
  while (!refused && Date.now() < until) {
    const calls = batch(5, uid('probe'));
    const res = await send(calls);
    const text = await res.text();
    if (res.status === 503) refused = { calls, res, text };
    else t.equal(res.status, 200, `an admitted batch is answered (${text.slice(0, 100)})`);
  }
  const statuses = await load.stop();
  t.ok(statuses.every((x) => x === 200 || x === 503), 'the background batches are answered or refused, never failed');
  if (!refused) { t.fail('no write was refused while the workers were behind'); return; }
  const body = JSON.parse(refused.text);
  t.equal(body.error.code, 'dependency_unavailable');
  t.match(body.error.message, /behind/);
  t.equal(refused.res.headers.get('retry-after'), '1', 'Retry-After says when to come back');
  t.equal(body.meta.requestId, refused.res.headers.get('x-request-id'));

  // Sent again once the backlog is gone: every call is new (201), none a replay of a stored one.
  const again = await poll(async () => { const r = await send(refused!.calls); return { status: r.status, body: await r.json() as any }; },
    (r) => r.status === 200, 60_000, 200);
  t.equal(again.status, 200);
  t.same(again.body.data.map((x: any) => x.status), refused.calls.map(() => 201), 'nothing of the refused request had been written');
});

t.test('a single call is refused the same way, in the error envelope', async (t) => {
  const load = pressure();
  let res: Awaited<ReturnType<typeof call>> | undefined;
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    res = await call(s.url, 'POST', '/v1/track', { token: f.key, body: { data: { sourceId: f.source.id, event: 'Shed', messageId: uid('m'), identifiers: { userId: 'one' } } } });
    if (res.status === 503) break;
  }
  await load.stop();
  expectError(t, res!, 503, 'dependency_unavailable', 'a track while behind');
  t.equal(res!.headers.get('retry-after'), '1');
});
