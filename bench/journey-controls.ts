// Journey-controls figures (docs/authoring.md, "Controls"; results in bench/results/journey-controls.md):
// 1. Ingest cost of events that name neither an exit rule nor a goal: batch ingestion of `Viewed`
//    over 1,000 profiles that each have a waiting execution of a journey with `exitOn` and `goal`,
//    with that journey enabled and disabled (the same org, profiles and load), alternated, median of
//    three runs each way.
// 2. GET /v1/journeys/{key}/metrics for a journey with 100,000 executions: median and worst of 7
//    answers, and the plan of each of its statements.
// Runs a service in this process (embedded, or the servers DATABASE_URL / NATS_URL name):
//   node dist/bench/journey-controls.js [--seconds 8] [--executions 100000]
import { createHash, randomBytes } from 'node:crypto';
import { build } from 'esbuild';
import { arg } from './args.js';
import { benchOrg, startInProcess } from './in-process.js';

const SECONDS = Number(arg('--seconds', '8'));
const EXECUTIONS = Number(arg('--executions', '100000'));
const svc = await startInProcess('controls');
const { url, pool } = svc;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function http(method: string, path: string, tok: string, body?: unknown, raw?: Buffer) {
  const r = await fetch(url + path, {
    method, headers: { authorization: `Bearer ${tok}`, 'content-type': raw ? 'application/octet-stream' : 'application/json' },
    body: raw ? new Uint8Array(raw) : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const { admin, apiKey, orgId, appId, sourceId } = await benchOrg(svc);
const KEY = 'promo';
const options = { key: KEY, trigger: { event: 'Started' }, purpose: 'onboarding', exitOn: 'Stopped', goal: { event: 'Bought', within: '30d' } };
const code = Buffer.from((await build({
  stdin: { contents: `const journey = (o, h) => ({ kind: 'journey', key: o.key, options: o, handler: h });
    export default journey(${JSON.stringify(options)}, async (ctx) => { await ctx.sleep('30d'); });` },
  bundle: true, format: 'esm', platform: 'neutral', target: 'es2020', write: false,
})).outputFiles[0]!.contents);
const src = randomBytes(1000);
await http('PUT', `/v1/artifacts/${sha(src)}?kind=source`, admin, undefined, src);
await http('PUT', `/v1/artifacts/${sha(code)}?kind=bundle`, admin, undefined, code);
const { key: _k, ...entryOptions } = options;
const p = await http('POST', '/v1/pushes', admin, { data: { orgId, appId, manifest: {
  protocol: 3, sdk: 'bench', templates: [], source: sha(src), journeys: [{ key: KEY, ...entryOptions, spine: [{ name: 'sleep', timeout: '30d' }], bundle: sha(code) }] } } });
for (;;) {
  const g = (await http('GET', `/v1/pushes/${p.data.id}`, admin)).data;
  if (g.compiledEntries === g.totalEntries) { if (g.versions[0].status !== 'ready') throw new Error(g.versions[0].error); break; }
  await new Promise((r) => setTimeout(r, 50));
}
const enable = (enabled: boolean) => http('PATCH', `/v1/journeys/${KEY}`, admin, { data: { enabled } });
await enable(true);

// 1,000 consenting profiles, each with a waiting execution of the journey.
const USERS = 1000;
const user = (i: number) => `u${i}`;
const batch = (calls: unknown[]) => http('POST', '/v1/batch', apiKey, { data: { sourceId, calls } });
for (let i = 0; i < USERS; i += 250) {
  for (const type of ['identify', 'track']) {
    const r = await batch(Array.from({ length: 250 }, (_, j) => type === 'identify'
      ? { type, identifiers: { userId: user(i + j) }, traits: { consent: { onboarding: true } } }
      : { type, identifiers: { userId: user(i + j) }, event: 'Started', messageId: randomBytes(8).toString('hex') }));
    const bad = r.data.find((x: any) => x.status >= 300);
    if (bad) throw new Error(`${type}: ${JSON.stringify(bad)}`);
  }
}
for (let i = 0; ; i++) {
  const r = await pool.query(`SELECT status, count(*)::int AS n FROM executions WHERE org_id = '${orgId}' GROUP BY 1`);
  const waiting = r.rows.find((x) => x.status === 'waiting')?.n ?? 0;
  if (waiting >= USERS) break;
  if (i % 50 === 49) console.log(`waiting for the executions: ${JSON.stringify(r.rows)}`);
  await new Promise((r) => setTimeout(r, 200));
}
console.log(`${USERS} waiting executions`);

/**
 * Batches of 100 `Viewed` tracks over the 1,000 profiles, 4 in flight, for `ms`; answers accepted
 * calls per second and this process's CPU time per accepted call (µs). The service runs in this
 * process (with embedded Postgres too), so the CPU per call is less at the mercy of other load on a
 * shared machine than the throughput is.
 */
async function ingestFor(ms: number): Promise<[number, number]> {
  let calls = 0;
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  const lane = async () => {
    while (Date.now() - t0 < ms) {
      const r = await batch(Array.from({ length: 100 }, (_, i) => ({ type: 'track', identifiers: { userId: user(Math.floor(Math.random() * USERS)) }, event: 'Viewed', properties: { i }, messageId: randomBytes(8).toString('hex') })));
      calls += r.data.filter((x: any) => x.status === 201).length;
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
  const cpu = process.cpuUsage(cpu0);
  return [calls / ((Date.now() - t0) / 1000), (cpu.user + cpu.system) / Math.max(1, calls)];
}

await ingestFor(3000); // warm-up
const withJ: Array<[number, number]> = [], without: Array<[number, number]> = [];
for (let i = 0; i < 3; i++) {
  await enable(true);
  withJ.push(await ingestFor(SECONDS * 1000));
  await enable(false);
  without.push(await ingestFor(SECONDS * 1000));
}
const w = median(withJ.map((x) => x[0])), wo = median(without.map((x) => x[0]));
const cw = median(withJ.map((x) => x[1])), cwo = median(without.map((x) => x[1]));
const runs = (xs: Array<[number, number]>) => xs.map((x) => `${x[0].toFixed(0)}/s ${x[1].toFixed(0)} µs`).join(', ');
console.log(`ingest of events naming neither, medians of 3 alternated runs of ${SECONDS} s: with the journey ${w.toFixed(0)} calls/s, ${cw.toFixed(0)} µs CPU per call (${runs(withJ)}); ` +
  `without ${wo.toFixed(0)} calls/s, ${cwo.toFixed(0)} µs (${runs(without)}): throughput ${(((wo - w) / wo) * 100).toFixed(1)} % lower, CPU per call ${(((cw - cwo) / cwo) * 100).toFixed(1)} % higher`);

// 100,000 executions of the journey over the last 23 hours: 10 % held out (completed), of the rest
// a third waiting (one per profile), the others completed or cancelled by the exit rule; 1 in 7
// converted; split `copy` A / B; each with a trigger event and a two-entry journal of about 1 KB,
// as real executions carry (a heap of bare rows would make whole-table scans look cheaper).
await pool.query(`DELETE FROM executions WHERE org_id = '${orgId}'`);
const v = (await pool.query(`SELECT version_id, release_id, app_id, source_id, environment FROM journeys WHERE org_id = '${orgId}' AND key = '${KEY}'`).catch(() => ({ rows: [] as any[] }))).rows[0]
  ?? { version_id: 'v', release_id: 'r', app_id: appId, source_id: sourceId, environment: 'production' };
const t0 = Date.now();
for (let i = 0; i < EXECUTIONS; i += 10_000) {
  await pool.query(`INSERT INTO executions (id, org_id, journey_key, version_id, release_id, app_id, source_id, profile_id, environment,
      trigger_event_id, run_id, event, journal, journal_entries, status, step, wait, started_at, updated_at, ended_at, exit_reason, converted, converted_at, holdout, variants)
    SELECT 'exb_' || n, '${orgId}', '${KEY}', '${v.version_id}', '${v.release_id}', '${v.app_id}', '${v.source_id}', 'prb_' || n, '${v.environment}',
      'evb_' || n, 'run', jsonb_build_object('event', 'Started', 'id', 'evb_' || n, 'properties', jsonb_build_object('plan', 'pro', 'campaign', repeat('x', 200))),
      jsonb_build_array(jsonb_build_object('at', 0, 'name', 'split', 'args', jsonb_build_object('name', 'copy'), 'value', 'A', 'recordedAt', s),
        jsonb_build_object('at', 1, 'name', 'email.send', 'args', jsonb_build_object('template', 'welcome', 'props', repeat('y', 300)), 'recordedAt', s)), 2, st, CASE WHEN st = 'waiting' THEN 'sleep' END,
      CASE WHEN st = 'waiting' THEN '{"position": 1, "call": {"name": "sleep", "args": {"duration": "30d"}}}'::jsonb END,
      s, s, CASE WHEN st <> 'waiting' THEN s + interval '5 minutes' END,
      CASE WHEN st = 'cancelled' THEN 'event:Stopped' END, conv, CASE WHEN conv THEN s + interval '10 minutes' END, ho,
      CASE WHEN ho THEN '{}'::jsonb WHEN n % 2 = 0 THEN '{"copy": "A"}'::jsonb ELSE '{"copy": "B"}'::jsonb END
    FROM (SELECT n, now() - (n % 82800) * interval '1 second' AS s, n % 10 = 0 AS ho, n % 7 = 0 AS conv,
            CASE WHEN n % 10 = 0 THEN 'completed' WHEN n % 3 = 0 THEN 'waiting' WHEN n % 3 = 1 THEN 'completed' ELSE 'cancelled' END AS st
          FROM generate_series(${i}, ${Math.min(i + 10_000, EXECUTIONS) - 1}) AS n) x`);
}
await pool.query('VACUUM ANALYZE executions');
console.log(`loaded ${EXECUTIONS} executions in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const times: number[] = [];
let last: any;
for (let i = 0; i < 7; i++) {
  const a = performance.now();
  last = (await http('GET', `/v1/journeys/${KEY}/metrics`, admin)).data;
  times.push(performance.now() - a);
}
console.log(`metrics of ${last.totals.entered} executions: median ${median(times).toFixed(0)} ms, worst ${Math.max(...times).toFixed(0)} ms ` +
  `(${times.map((x) => x.toFixed(0)).join(', ')}); totals ${JSON.stringify(last.totals)}, conversionRate ${last.conversionRate?.toFixed(3)}, lift ${last.lift?.toFixed(3)}`);
const W = `org_id = '${orgId}' AND journey_key = '${KEY}'`;
const since = `now() - interval '24 hours'`;
const E = `timestamptz '2000-01-01T00:00:00Z'`;
for (const [name, sql] of [
  ['cohort', `SELECT date_bin('1 hour', started_at, ${E}), holdout, converted, variants, count(*) FROM executions WHERE ${W} AND started_at >= ${since} AND started_at < now() GROUP BY 1, 2, 3, 4`],
  ['ended', `SELECT date_bin('1 hour', ended_at, ${E}), status, exit_reason IS NOT NULL, count(*) FROM executions WHERE ${W} AND ended_at >= ${since} AND ended_at < now() GROUP BY 1, 2, 3`],
  ['conversions', `SELECT date_bin('1 hour', converted_at, ${E}), count(*) FROM executions WHERE ${W} AND converted_at >= ${since} AND converted_at < now() GROUP BY 1`],
  ['active', `SELECT status, wait->'position', wait->'call', step, count(*) FROM executions WHERE ${W} AND status IN ('running', 'waiting') GROUP BY 1, 2, 3, 4`],
] as const) {
  const plan = (await pool.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`)).rows.map((r) => r['QUERY PLAN'] as string);
  const scans = plan.filter((l) => /Scan/.test(l)).map((l) => l.trim().replace(/\s+\(cost.*$/, ''));
  const exec = plan.find((l) => l.startsWith('Execution Time'));
  const heap = plan.filter((l) => /Heap Fetches/.test(l)).map((l) => l.trim());
  console.log(`  ${name}: ${scans.join('; ')}${heap.length ? ` [${heap.join(', ')}]` : ''}; ${exec}`);
}
await svc.close();
