// Privacy figures: erasing a profile with 100,000 events while batch ingestion of other profiles
// runs (erasure time, ingestion throughput during it against without it), and ingestion of an org
// with 100,000 suppressed identifiers against one with none. Runs a service in this process
// (embedded, or the servers DATABASE_URL / NATS_URL name): `node dist/bench/privacy.js [events]`.
import { createHash, randomBytes } from 'node:crypto';
import { benchOrg, startInProcess } from './in-process.js';

const EVENTS = Number(process.argv[2] ?? 100_000);
const svc = await startInProcess('privacy');
const { url, pool } = svc;

async function http(method: string, path: string, tok?: string, body?: unknown) {
  const r = await fetch(url + path, { method, headers: { ...(tok ? { authorization: `Bearer ${tok}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

async function fixture() {
  const o = await benchOrg(svc);
  return { orgId: o.orgId, admin: o.admin, key: o.apiKey, sourceId: o.sourceId };
}
type Fx = Awaited<ReturnType<typeof fixture>>;

const batch = (f: Fx, user: () => string, n: number) => http('POST', '/v1/batch', f.key, { data: { sourceId: f.sourceId, calls: Array.from({ length: n }, (_, i) => ({ type: 'track', identifiers: { userId: user() }, event: 'Viewed', properties: { i }, messageId: randomBytes(8).toString('hex') })) } });

/**
 * Batches of 100 tracks over 1,000 users, 4 in flight, until `until()`; answers accepted calls per
 * second. `log` gets each answered batch's time and accepted calls.
 */
async function ingestWhile(f: Fx, until: () => boolean, minMs: number, log?: Array<[number, number]>): Promise<number> {
  let calls = 0;
  const t0 = Date.now();
  const lane = async () => {
    while (Date.now() - t0 < minMs || !until()) {
      const r = await batch(f, () => `u${Math.floor(Math.random() * 1000)}`, 100);
      const n = r.status === 200 ? r.body.data.filter((x: any) => x.status === 201).length : 0;
      calls += n;
      log?.push([Date.now(), n]);
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
  return calls / ((Date.now() - t0) / 1000);
}

const a = await fixture();
// `suppression` as the second argument measures only the suppression check.
if (process.argv[3] !== 'suppression') {
// The profile to erase and its events.
const target = `victim-${randomBytes(3).toString('hex')}`;
const p = await http('POST', '/v1/identify', a.key, { data: { sourceId: a.sourceId, identifiers: { userId: target } } });
const t0 = Date.now();
for (let sent = 0; sent < EVENTS;) {
  const n = Math.min(2000, EVENTS - sent);
  await Promise.all(Array.from({ length: n / 500 }, () => batch(a, () => target, 500)));
  sent += n;
}
for (;;) {
  // Its stored answers (segment history is kept only for names a segment names: none here).
  const r = await pool.query(`SELECT count(*)::int AS n FROM messages WHERE org_id = $1 AND COALESCE(result->>'profileId', result->'event'->>'profileId') = $2`, [a.orgId, p.body.data.id]);
  if (r.rows[0].n >= EVENTS) break;
  await new Promise((r) => setTimeout(r, 200));
}
console.log(`loaded ${EVENTS} events for one profile in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
await new Promise((r) => setTimeout(r, 3000));

// Export of that profile, read as it streams: memory must stay flat (the service is in this process).
{
  global.gc?.();
  const before = process.memoryUsage();
  let peakHeap = before.heapUsed, peakRss = before.rss;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed); peakRss = Math.max(peakRss, m.rss);
  }, 50);
  const x0 = Date.now();
  const res = await fetch(`${url}/v1/profiles/${p.body.data.id}/export`, { headers: { authorization: `Bearer ${a.admin}` } });
  let lines = 0, bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (const c of chunk) if (c === 10) lines++;
  }
  clearInterval(sampler);
  const mb = (n: number) => (n / 1048576).toFixed(0);
  console.log(`export: ${lines} lines, ${mb(bytes)} MB in ${((Date.now() - x0) / 1000).toFixed(1)} s; heap ${mb(before.heapUsed)} -> peak ${mb(peakHeap)} MB, RSS ${mb(before.rss)} -> peak ${mb(peakRss)} MB`);
}

// The machine's own noise is +-15 % between runs of the same load: the baseline is the median of three.
const bases = [await ingestWhile(a, () => true, 5_000), await ingestWhile(a, () => true, 5_000), await ingestWhile(a, () => true, 5_000)];
const base = [...bases].sort((x, y) => x - y)[1]!;
console.log(`ingestion without an erasure: ${base.toFixed(0)} calls/s (median of ${bases.map((x) => x.toFixed(0)).join(', ')})`);
const er = await http('POST', `/v1/profiles/${p.body.data.id}/erase`, a.admin, { data: {} });
const e0 = Date.now();
let done = 0;
const watch = (async () => {
  for (;;) {
    const r = await http('GET', `/v1/erasures/${er.body.data.id}`, a.admin);
    if (r.body.data.status === 'completed') { done = Date.now(); return; }
    await new Promise((r) => setTimeout(r, 100));
  }
})();
const answered: Array<[number, number]> = [];
const window5 = await ingestWhile(a, () => done > 0, 5_000, answered);
await watch;
// Strictly while the job ran: batches answered between the request and `completed`.
const inside = answered.filter(([at]) => at > e0 && at <= done).reduce((n, [, k]) => n + k, 0) / ((done - e0) / 1000);
console.log(`erasure of ${EVENTS} events: ${((done - e0) / 1000).toFixed(1)} s; ingestion while it ran: ${inside.toFixed(0)} calls/s (${(inside / base).toFixed(2)}x); over the 5 s from its start: ${window5.toFixed(0)} calls/s (${(window5 / base).toFixed(2)}x)`);

}

// Suppression: org B holds 100,000 suppressed identifiers, org A none.
const b = await fixture();
const ids = Array.from({ length: 100_000 }, (_, i) => `sup_${i}_${randomBytes(4).toString('hex')}`);
// Literal SQL (the simple protocol): embedded Postgres is one session shared with the service, where
// an unnamed prepared statement of ours could meet one of its own.
const hashes = ids.map((v) => createHash('sha256').update(v).digest('hex'));
for (let i = 0; i < hashes.length; i += 10_000) {
  const rows = hashes.slice(i, i + 10_000).map((h) => `('sup_${h.slice(0, 26)}', '${b.orgId}', 'userId', '${h}')`).join(',');
  await pool.query(`INSERT INTO suppressions (id, org_id, kind, hash) VALUES ${rows}`);
}
await pool.query(`UPDATE orgs SET suppressions_version = suppressions_version + 1 WHERE id = '${b.orgId}'`);
const rounds: Array<[number, number]> = [];
for (let i = 0; i < 3; i++) rounds.push([await ingestWhile(a, () => true, 8_000), await ingestWhile(b, () => true, 8_000)]);
const med = (xs: number[]) => xs.sort((x, y) => x - y)[1]!;
const none = med(rounds.map((r) => r[0])), many = med(rounds.map((r) => r[1]));
console.log(`suppression: org with none ${none.toFixed(0)} calls/s, org with 100,000 ${many.toFixed(0)} calls/s (${(many / none).toFixed(2)}x), medians of 3`);
await svc.close();
