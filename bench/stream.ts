// Micro-benchmark of the ingestion stream alone: submit -> consume (trivial handler) -> result,
// N calls, in-process and (when NATS answers on 127.0.0.1:4222) on JetStream. The front end and the
// worker share this one Node process (and, for JetStream, the machine with nats-server), so the
// figures are a floor for a split deployment.
//   node dist/bench/stream.js [N=50000] [callsPerSubmit=1] [inFlightSubmits=1000] [lingerMs=1]
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createLogger } from '../lib/log.js';
import { createInProcessStreams, createJetStreams, streamNames, type IngestStream } from '../pipeline/stream/mod.js';
import type { IngestCall } from '../pipeline/types.js';

const N = Number(process.argv[2] ?? 50_000);
const PER = Number(process.argv[3] ?? 1);
const INFLIGHT = Number(process.argv[4] ?? 1000);
const LINGER = Number(process.argv[5] ?? 1);
const log = createLogger('warn');

function mkCall(i: number): IngestCall {
  return {
    id: `call_${i}_${randomBytes(6).toString('hex')}`, kind: 'track', orgId: 'org_bench', appId: 'app_1', sourceId: 'src_1',
    environment: 'production', receivedAt: Date.now(),
    body: { identifiers: { userId: `user_${i % 977}` }, event: 'Page Viewed', properties: { path: '/pricing', n: i }, messageId: `m_${i}` },
  };
}

/** Submits N calls, PER per submit, INFLIGHT submits at once; returns calls/s and the median latency. */
async function run(ingest: IngestStream): Promise<{ rate: number; batches: number; p50: number; p99: number }> {
  let batches = 0;
  const consumer = ingest.consume(async (calls) => { batches++; return calls.map((c) => ({ status: 201, data: { id: c.id } })); });
  const calls = Array.from({ length: N }, (_, i) => mkCall(i));
  const t0 = performance.now();
  let next = 0;
  let wrong = 0;
  const lat: number[] = [];
  const lane = async () => {
    while (next < N) {
      const chunk = calls.slice(next, next + PER);
      next += PER;
      const s0 = performance.now();
      const res = await ingest.submit(chunk);
      lat.push(performance.now() - s0);
      res.forEach((r, i) => { if ((r as { data: { id: string } }).data.id !== chunk[i]!.id) wrong++; });
    }
  };
  await Promise.all(Array.from({ length: INFLIGHT }, lane));
  const secs = (performance.now() - t0) / 1000;
  await consumer.close();
  if (wrong) throw new Error(`${wrong} results went to the wrong call`);
  lat.sort((a, b) => a - b);
  const q = (p: number) => Math.round(lat[Math.floor(p * (lat.length - 1))]! * 10) / 10;
  return { rate: Math.round(N / secs), batches, p50: q(0.5), p99: q(0.99) };
}

const reachable = (port: number) => new Promise<boolean>((resolve) => {
  const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
  c.on('error', () => resolve(false));
});

const label = `N=${N}, ${PER} call(s)/submit, ${INFLIGHT} submits in flight`;
const show = (r: { rate: number; batches: number; p50: number; p99: number }) => `${r.rate} calls/s (${r.batches} batches, submit p50 ${r.p50} ms, p99 ${r.p99} ms)`;
{
  const s = createInProcessStreams({ log, maxPending: N + 1 });
  const r = await run(s.ingest);
  console.log(`in-process  ${label}: ${show(r)}`);
  await s.ingest.close(); await s.events.close();
}
if (await reachable(4222)) {
  // Front end and worker on separate connections, as in two processes.
  const front = await connect({ servers: '127.0.0.1:4222' });
  const back = await connect({ servers: '127.0.0.1:4222' });
  const prefix = 'B' + randomBytes(4).toString('hex');
  const f = await createJetStreams({ nc: front, log, names: { prefix } });
  const w = await createJetStreams({ nc: back, log, names: { prefix }, lingerMs: LINGER });
  const r = await run({ ...f.ingest, consume: w.ingest.consume });
  console.log(`jetstream   ${label}, linger ${LINGER} ms: ${show(r)}`);
  await f.ingest.close(); await f.events.close(); await w.ingest.close(); await w.events.close();
  const jsm = await jetstreamManager(front);
  for (const name of [streamNames(prefix).ingestStream, streamNames(prefix).eventsStream]) await jsm.streams.delete(name);
  await front.close(); await back.close();
} else {
  console.log('jetstream: no NATS server on 127.0.0.1:4222, skipped');
}
