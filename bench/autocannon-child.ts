// The fallback load generator (used when wrk is not installed): autocannon in its own process,
// started by bench/load.ts with one JSON argument { target, settings }. Prints one line
// "BENCH_JSON {...}" in the LoadResult shape.
import { bodyFactory, pathOf, type LoadSettings, type LoadTarget, type LoadResult } from './load.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as { target: LoadTarget; settings: LoadSettings };
const { target: t, settings: s } = spec;
const moduleName = 'autocannon'; // no type declarations are installed: load it untyped
const autocannon = ((await import(moduleName)) as { default: any }).default;

const next = bodyFactory(t, 1);
const headers: Record<string, string> = { 'content-type': 'application/json' };
if (t.apiKey) headers.authorization = `Bearer ${t.apiKey}`;

const result: any = await new Promise((resolve, reject) => {
  autocannon({
    url: t.url + pathOf(t.kind),
    connections: s.connections,
    duration: s.durationS,
    timeout: s.timeoutS,
    method: 'POST',
    headers,
    requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, method: 'POST', body: next() }) }],
  }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res)));
});

const out: LoadResult = {
  tool: 'autocannon',
  durationS: result.duration,
  responses: result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'],
  ok: result['2xx'],
  non2xx: result.non2xx,
  socketErrors: Math.max(0, result.errors - result.timeouts),
  timeouts: result.timeouts,
  p50Ms: result.latency.p50, p90Ms: result.latency.p90, p99Ms: result.latency.p99,
  meanMs: result.latency.mean, maxMs: result.latency.max,
  statusCodes: Object.fromEntries(Object.entries((result.statusCodeStats ?? {}) as Record<string, { count: number }>).map(([k, v]) => [k, v.count])),
};
process.stdout.write(`BENCH_JSON ${JSON.stringify(out)}\n`);
