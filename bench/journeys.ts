// Journey-project figures: artifact PUT throughput and the server's RSS while a large artifact
// streams in (it must not grow by the artifact's size), and compile time per version.
//
//   node dist/bench/journeys.js [--mb 32] [--uploads 3] [--versions 50]
// The server is `node bin/headwater.js serve`, a child process (embedded stores; with DATABASE_URL /
// NATS_URL set, against those servers). Its RSS is sampled from /proc every 10 ms.
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { build } from 'esbuild';
import { arg } from './args.js';
import { memory } from './procstat.js';
import { spawnServe } from './child.js';

const MB = Number(arg('--mb', '32'));
const UPLOADS = Number(arg('--uploads', '3'));
const VERSIONS = Number(arg('--versions', '50'));

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const startServer = () => spawnServe();

async function api(url: string, method: string, path: string, token: string, body?: unknown) {
  const r = await fetch(url + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** PUT with 64 KiB writes that respect backpressure, so the client never races ahead of the server. */
function putStream(url: string, token: string, bytes: Buffer, digest: string, kind = 'bundle'): Promise<number> {
  const u = new URL(`${url}/v1/artifacts/${digest}?kind=${kind}`);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'PUT', agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-length': bytes.length, 'content-type': 'application/octet-stream' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    (async () => {
      for (let at = 0; at < bytes.length; at += 65536) {
        if (!req.write(bytes.subarray(at, at + 65536))) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })().catch(reject);
  });
}

async function main() {
  const srv = await startServer();
  try {
    const created = await api(srv.url, 'POST', '/v1/orgs', srv.token, { data: { name: 'bench' } });
    const admin: string = created.data.sessions.admin;
    const orgId: string = created.data.org.id;
    const app = await api(srv.url, 'POST', '/v1/apps', admin, { data: { name: 'bench' } });

    // ---------------------------------------------------------------- artifacts
    const warm = randomBytes(1024 * 1024);
    await putStream(srv.url, admin, warm, sha(warm));
    await new Promise((r) => setTimeout(r, 500));
    const rates: number[] = [];
    const growth: number[] = [];
    let baseline = 0;
    for (let i = 0; i < UPLOADS; i++) {
      const bytes = randomBytes(MB * 1024 * 1024);
      const digest = sha(bytes);
      const before = memory(srv.pid)!.rssMB;
      let peak = before;
      const sampler = setInterval(() => { const m = memory(srv.pid); if (m && m.rssMB > peak) peak = m.rssMB; }, 10);
      const t0 = performance.now();
      const status = await putStream(srv.url, admin, bytes, digest);
      const s = (performance.now() - t0) / 1000;
      clearInterval(sampler);
      if (status !== 201) throw new Error(`upload answered ${status}`);
      rates.push(MB / s);
      growth.push(peak - before);
      baseline = before;
      console.log(`upload ${i + 1}: ${MB} MiB in ${s.toFixed(2)} s = ${(MB / s).toFixed(1)} MiB/s; server RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MB (+${(peak - before).toFixed(1)})`);
    }

    // ---------------------------------------------------------------- compile
    const src = randomBytes(1000);
    const srcDigest = sha(src);
    await putStream(srv.url, admin, src, srcDigest, 'source');
    const bundleOf = async (key: string) => Buffer.from((await build({
      stdin: { contents: `const journey = (o, h) => ({ kind: 'journey', key: o.key, options: o, handler: h });
        export default journey({ key: ${JSON.stringify(key)}, trigger: { event: 'e' }, purpose: 'p' }, async (ctx) => { await ctx.sleep('1s'); await ctx.events.track('x', { n: ${JSON.stringify(key)} }); });` },
      bundle: true, format: 'esm', platform: 'neutral', target: 'es2020', write: false,
    })).outputFiles[0]!.contents);
    const entry = (key: string, digest: string) => ({ key, trigger: { event: 'e' }, purpose: 'p', spine: [], bundle: digest });
    const pushAndWait = async (keys: string[]) => {
      const journeys = [];
      for (const k of keys) { const b = await bundleOf(k); const d = sha(b); await putStream(srv.url, admin, b, d); journeys.push(entry(k, d)); }
      const t0 = performance.now();
      const p = await api(srv.url, 'POST', '/v1/pushes', admin, { data: { orgId, appId: app.data.id, manifest: { protocol: 3, sdk: 'bench', journeys, templates: [], source: srcDigest } } });
      for (;;) {
        const g = await api(srv.url, 'GET', `/v1/pushes/${p.data.id}`, admin);
        if (g.data.compiledEntries === g.data.totalEntries) {
          const ms = performance.now() - t0;
          const failed = g.data.versions.filter((v: any) => v.status !== 'ready');
          if (failed.length) throw new Error(`compile failed: ${failed[0].error}`);
          return ms;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const cold = await pushAndWait(['cold']);
    console.log(`first compile (thread start, QuickJS and esbuild load): ${cold.toFixed(0)} ms`);
    const one = [];
    for (let i = 0; i < 5; i++) one.push(await pushAndWait([`warm${i}`]));
    console.log(`one version, push to ready (warm): median ${median(one).toFixed(0)} ms`);
    const keys = Array.from({ length: VERSIONS }, (_, i) => `batch${i}`);
    const batch = await pushAndWait(keys);
    console.log(`${VERSIONS} versions in one push: ${batch.toFixed(0)} ms, ${(batch / VERSIONS).toFixed(1)} ms per version (1 compile thread)`);

    console.log(JSON.stringify({
      artifactMiB: MB, putMiBps: Number(median(rates).toFixed(1)), rssBaselineMB: Math.round(baseline),
      rssGrowthMB: Number(Math.max(...growth).toFixed(1)), coldCompileMs: Math.round(cold),
      warmPushToReadyMs: Math.round(median(one)), perVersionMs: Number((batch / VERSIONS).toFixed(1)),
      mode: process.env.DATABASE_URL ? 'postgres' : 'embedded',
    }));
  } finally {
    await srv.close();
  }
}

await main();
