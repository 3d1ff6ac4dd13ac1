// GET /metrics (operator token) and HEADWATER_METRICS_PORT (no credential): the Prometheus text an
// operator scales from. Checked through real calls: the counters move with what was sent.
import t from 'tap';
import { createServer } from 'node:net';
import { call, createAppFixture, poll, startServer, startWorker, trackCall, uid } from './helpers/server.js';

const freePort = () => new Promise<number>((resolve) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => { const p = (srv.address() as { port: number }).port; srv.close(() => resolve(p)); });
});
/** The value of one sample line (`name{labels} value`), summed over lines whose labels include all of `labels`. */
const sample = (text: string, name: string, labels: Record<string, string> = {}) => {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum = (sum ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
};

const metricsPort = await freePort();
const s = await startServer(['--metrics-port', String(metricsPort)]);
t.teardown(() => s.close());
const f = await createAppFixture(s);
const scrape = async () => {
  const r = await call(s.url, 'GET', '/metrics', { token: s.operatorToken });
  return r.text;
};

t.test('GET /metrics needs the operator token', async (t) => {
  t.equal((await call(s.url, 'GET', '/metrics')).status, 401);
  t.equal((await call(s.url, 'GET', '/metrics', { token: f.key })).status, 401, 'an API key is not enough');
  t.equal((await call(s.url, 'GET', '/metrics', { token: f.admin })).status, 401, 'nor an admin session');
  const r = await call(s.url, 'GET', '/metrics', { token: s.operatorToken });
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^text\/plain/);
});

t.test('the process metrics include the event-loop delay, sampled', async (t) => {
  // Sampled every 100 ms (not every 10 ms: that timer woke an idle server 100 times a second).
  const text = await poll(scrape, (x) => /^headwater_nodejs_eventloop_lag_p99_seconds [0-9.e-]+$/m.test(x) && !/^headwater_nodejs_eventloop_lag_p99_seconds 0$/m.test(x), 5000);
  const p99 = Number(/^headwater_nodejs_eventloop_lag_p99_seconds ([0-9.e-]+)$/m.exec(text)?.[1]);
  t.ok(p99 > 0, `event-loop delay p99 is reported (${p99} s)`);
  t.match(text, /^headwater_process_cpu_seconds_total /m);
});

t.test('the counters follow the calls', async (t) => {
  const before = await scrape();
  const accepted = (x: string) => sample(x, 'headwater_ingest_calls_total', { kind: 'track', outcome: 'accepted' }) ?? 0;
  const replayed = (x: string) => sample(x, 'headwater_ingest_calls_total', { kind: 'track', outcome: 'replayed' }) ?? 0;
  const requests = (x: string) => sample(x, 'headwater_http_requests_total', { route: '/v1/track', method: 'POST', status: '201' }) ?? 0;
  const messageId = uid('m');
  for (let i = 0; i < 5; i++) t.equal((await trackCall(s, f, { event: 'Metered', identifiers: { userId: uid('u') }, ...(i === 0 ? { messageId } : {}) })).status, 201);
  t.equal((await trackCall(s, f, { event: 'Metered', messageId, identifiers: { userId: 'x' } })).status, 200, 'a replay');
  const after = await scrape();
  t.equal(accepted(after) - accepted(before), 5, 'five calls accepted');
  t.equal(replayed(after) - replayed(before), 1, 'one replayed');
  t.equal(requests(after) - requests(before), 5, 'five 201 answers of POST /v1/track');
  t.ok((sample(after, 'headwater_http_request_duration_seconds_count', { route: '/v1/track' }) ?? 0) >= 6, 'latencies observed per route template');
  t.ok((sample(after, 'headwater_ingest_batch_seconds_count') ?? 0) >= 1, 'batch latencies');
  // Embedded, the event writer reports how long it held each batch for ingestion (0 when nobody waited).
  if (!process.env.DATABASE_URL) {
    const landed = await poll(scrape, (x) => (sample(x, 'headwater_event_landing_held_seconds_count') ?? 0) >= 1, 10_000);
    t.ok((sample(landed, 'headwater_event_landing_held_seconds_count') ?? 0) >= 1, 'landing holds observed');
  }
  for (const name of ['headwater_stream_pending_messages', 'headwater_stream_oldest_seconds', 'headwater_worker_utilization', 'headwater_worker_threads',
    'headwater_worker_queued_batches', 'headwater_event_landing_waiting_events', 'headwater_ingest_waiting_calls', 'headwater_ingest_oldest_wait_seconds', 'headwater_pg_pool_connections', 'headwater_backlog']) {
    t.not(sample(after, name), undefined, `${name} is reported`);
  }
  t.not(sample(after, 'headwater_stream_pending_messages', { stream: 'ingest' }), undefined, 'ingest stream lag');
  // On JetStream, serve lands its own batches' events (its chDB): they wait for the insert, then none do.
  const inserted = (x: string) => sample(x, 'headwater_events_inserted_total') ?? 0;
  const landed = await poll(scrape, (x) => inserted(x) - inserted(before) >= 5 && sample(x, 'headwater_event_landing_waiting_events') === 0, 10_000);
  t.ok(inserted(landed) - inserted(before) >= 5, 'the five events were inserted by this process');
  t.equal(sample(landed, 'headwater_event_landing_waiting_events'), 0, 'no answered event waits for its insert any more');
  t.not(sample(after, 'headwater_backlog', { kind: 'executions' }), undefined, 'runner backlog');
  // Embedded the process is told of all work; on a shared PostgreSQL its LISTEN connection is up.
  t.equal(sample(after, 'headwater_work_notifications_listening'), 1, 'work notifications reach this process');
});

t.test('the metrics port answers without a credential, and nothing else', async (t) => {
  const r = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  t.equal(r.status, 200);
  t.match(await r.text(), /headwater_http_requests_total/);
  t.equal((await fetch(`http://127.0.0.1:${metricsPort}/v1/events`)).status, 404);
});

t.test('a headwater worker serves its own metrics on its port', { skip: !(process.env.DATABASE_URL && process.env.NATS_URL) && 'needs DATABASE_URL and NATS_URL' }, async (t) => {
  const port = await freePort();
  await startWorker(t, ['--metrics-port', String(port), '--host', '127.0.0.1']);
  const r = await fetch(`http://127.0.0.1:${port}/metrics`);
  t.equal(r.status, 200);
  const text = await r.text();
  t.equal(sample(text, 'headwater_worker_threads'), 1, 'its one worker thread');
  t.not(sample(text, 'headwater_stream_pending_messages', { stream: 'ingest' }), undefined);
});
