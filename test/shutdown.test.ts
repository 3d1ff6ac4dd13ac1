// Graceful shutdown: requests in flight when close() starts are finished and answered; the
// listening socket is closed so new connections are refused.
import t from 'tap';
import { call, createOrg, metric, startServer, until } from './helpers/server.js';

t.test('close() finishes in-flight requests', async (t) => {
  const s = await startServer([], {});
  const org = await createOrg(s);
  const app = await call(s.url, 'POST', '/v1/apps', { token: org.sessions.admin, body: { data: { name: 'shutdown' } } });
  const src = await call(s.url, 'GET', `/v1/apps/${app.body.data.id}/sources`, { token: org.sessions.admin });
  const sourceId = src.body.data[0].id;
  // Batches of 120 calls take a while to process: close() starts while they are in the workers.
  let answered = 0;
  const inflight = Array.from({ length: 4 }, (_, r) => call(s.url, 'POST', '/v1/batch', {
    token: org.apiKey,
    body: { data: { sourceId, calls: Array.from({ length: 120 }, (_, i) => ({ type: 'track', identifiers: { userId: `u${i % 7}` }, event: 'closing', messageId: `m${r}-${i}` })) } },
  }).finally(() => { answered++; }));
  // Close once calls wait for their results in the pipeline (or, on a fast machine, all were answered).
  t.ok(await until(async () => answered === 4 || await metric(s, 'headwater_ingest_waiting_calls') > 0, 10_000, 10), 'calls in the pipeline');
  const closing = s.close();
  const answers = await Promise.all(inflight.map((p) => p.catch((e: Error) => ({ status: 0, body: undefined, error: e.message }))));
  await closing;
  t.same(answers.filter((a) => a.status === 0), [], 'no connection was dropped');
  const done = answers.filter((a) => a.status === 200);
  t.ok(done.length > 0, 'requests in flight when close() began were answered');
  for (const a of done) t.same(a.body.data.filter((r: { status: number }) => r.status !== 201), [], 'each of their calls was processed');
  for (const a of answers.filter((x) => x.status !== 200)) t.equal(a.status, 503, 'a request arriving during shutdown is refused with 503');
  await t.rejects(call(s.url, 'GET', '/health/live'), 'new connections are refused after close');
});
