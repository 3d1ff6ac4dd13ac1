// Whether one org's segment change stalls another org's ingestion (docs/scaling.md, "Segment
// changes on large orgs"). `headwater serve` on the stores the environment names (DATABASE_URL and
// NATS_URL for the servers; embedded otherwise, where one session runs one transaction at a time);
// org A stores N track events of one name (userId among 1,000), then keeps sending batches of 20
// on 8 connections while org B sends single track calls in a loop; after 2 s a segment create on
// org A names the event, so its history is filled from A's stored events under A's exclusive
// segment lock. Prints the create's time and both orgs' answers (B's worst wait is the figure).
// `node dist/bench/tenant-stall.js [events]` (default 100,000).
import { randomBytes } from 'node:crypto';
import { spawnServe } from './child.js';
import { http, sleep } from './run-servers.js';

const N = Math.max(1_000, Number(process.argv[2] ?? 100_000));
const id = () => randomBytes(9).toString('hex');

interface Org { key: string; admin: string; source: string }

async function org(url: string, token: string): Promise<Org> {
  const o = (await http(url, 'POST', '/v1/orgs', token, { data: { name: `stall-${id()}` } })).body.data;
  await http(url, 'PATCH', `/v1/orgs/${o.org.id}`, token, { data: { limits: { ratePerSecond: 1e9, burst: 1e9 } } });
  const app = (await http(url, 'POST', '/v1/apps', o.sessions.admin, { data: { name: 'app' } })).body.data;
  const src = (await http(url, 'GET', `/v1/apps/${app.id}/sources`, o.sessions.admin)).body.data[0];
  return { key: o.apiKey, admin: o.sessions.admin, source: src.id };
}

interface Tally { ok: number; refused: number; other: number; waits: number[] }
const tally = (): Tally => ({ ok: 0, refused: 0, other: 0, waits: [] });
const count = (t: Tally, status: number, ok: number, ms: number) => {
  t.waits.push(ms);
  if (status === ok) t.ok++; else if (status === 503) t.refused++; else t.other++;
};
const summary = (t: Tally) => {
  const w = [...t.waits].sort((x, y) => x - y);
  return { ok: t.ok, refused503: t.refused, other: t.other, p50Ms: w[Math.floor(w.length / 2)] ?? 0, p99Ms: w[Math.floor(w.length * 0.99)] ?? 0, worstMs: w.at(-1) ?? 0 };
};

const srv = await spawnServe();
try {
  const a = await org(srv.url, srv.token);
  const b = await org(srv.url, srv.token);
  const batch = () => http(srv.url, 'POST', '/v1/batch', a.key, { data: { sourceId: a.source, calls: Array.from({ length: 20 }, () => ({
    type: 'track', event: 'Click', messageId: id(), identifiers: { userId: `u${Math.floor(Math.random() * 1000)}` },
  })) } });
  let stored = 0;
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (stored < N) { stored += 20; if ((await batch()).status !== 200) stored -= 20; }
  }));
  process.stdout.write(`org A: ${stored} events stored in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

  let stop = false;
  const ta = tally(), tb = tally();
  const loadA = Promise.all(Array.from({ length: 8 }, async () => {
    while (!stop) { const s = Date.now(); const r = await batch(); count(ta, r.status, 200, Date.now() - s); }
  }));
  const loadB = (async () => {
    while (!stop) {
      const s = Date.now();
      const r = await http(srv.url, 'POST', '/v1/track', b.key, { data: { sourceId: b.source, event: 'Beside', messageId: id(), identifiers: { userId: id() } } });
      count(tb, r.status, 201, Date.now() - s);
    }
  })();
  await sleep(2_000);
  const c0 = Date.now();
  const seg = await http(srv.url, 'POST', '/v1/segments', a.admin, { data: { name: 'clickers', definition: { predicates: [{ kind: 'event', name: 'Click', op: 'performed', atLeast: 3 }] } } });
  const createMs = Date.now() - c0;
  await sleep(2_000);
  stop = true;
  await Promise.all([loadA, loadB]);
  process.stdout.write(`${JSON.stringify({ store: process.env.DATABASE_URL ? (process.env.NATS_URL ? 'postgres+nats' : 'postgres') : 'embedded', events: stored,
    create: { status: seg.status, ms: createMs, members: seg.body?.data?.memberCount }, orgA: summary(ta), orgB: summary(tb) })}\n`);
} finally {
  await srv.close();
}
