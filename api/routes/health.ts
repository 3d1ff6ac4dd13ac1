import { httpError } from '../../http/errors.js';
import type { Bind, Deps } from './deps.js';

const CHECK_TIMEOUT_MS = 2000;

const withTimeout = (p: Promise<boolean>) => Promise.race([
  p.catch(() => false),
  new Promise<boolean>((r) => setTimeout(() => r(false), CHECK_TIMEOUT_MS).unref()),
]);

export function healthRoutes(bind: Bind, d: Deps, openapi: string) {
  bind('GET', '/health/live', () => ({ data: { status: 'ok' } }));

  bind('GET', '/health/ready', async () => {
    const names = Object.keys(d.checks);
    const results = await Promise.all(names.map((n) => withTimeout(d.checks[n]!())));
    const checks: Record<string, boolean> = {};
    names.forEach((n, i) => { checks[n] = results[i]!; });
    const down = names.filter((n) => !checks[n]);
    if (down.length) throw httpError('dependency_unavailable', `unavailable: ${down.join(', ')}`);
    return { data: { status: 'ok', checks, frontEnd: d.frontEnd } };
  });

  bind('GET', '/openapi.json', () => ({ raw: openapi, contentType: 'application/json' }));
}
