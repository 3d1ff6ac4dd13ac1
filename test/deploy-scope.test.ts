// The role matrix over every route of schemas/routes.ts: each credential kind is admitted exactly
// where the contract says. The deploy key's routes are written out here from the contract
// (executions, artifacts, journeys, GET /v1/users/me: the README's role matrix), not read from the
// server's table, so a route that drifts into (or out of) its scope fails here. Admitted calls
// carry placeholder ids and empty bodies: they may answer 404 or 422, never an auth refusal.
import t from 'tap';
import { routes } from '../schemas/routes.js';
import { startServer, call, createOrg } from './helpers/server.js';

const DEPLOY_KEY_CONTRACT = new Set([
  'GET /v1/executions', 'GET /v1/executions/{id}', 'POST /v1/executions/{id}/cancel',
  'HEAD /v1/artifacts/{digest}', 'PUT /v1/artifacts/{digest}',
  'GET /v1/journeys', 'GET /v1/journeys/{key}', 'PATCH /v1/journeys/{key}',
  'GET /v1/users/me',
]);

const s = await startServer();
t.teardown(() => s.close());
const org = await createOrg(s);

type Cred = 'apiKey' | 'deployKey' | 'pipelineKey' | 'admin' | 'member' | 'operator';
const TOKENS: Record<Cred, string> = {
  apiKey: org.apiKey, deployKey: org.deployKey, pipelineKey: org.pipelineKey,
  admin: org.sessions.admin, member: org.sessions.member, operator: s.operatorToken,
};
const SCHEME: Record<Cred, string> = { apiKey: 'apiKey', deployKey: 'deployKey', pipelineKey: 'pipelineKey', admin: 'session', member: 'session', operator: 'operator' };

/** What the contract answers `cred` on `r`: admitted, or the refusal's status and code. */
function expected(cred: Cred, r: (typeof routes)[number]): 'admitted' | [number, string] {
  if (cred === 'deployKey') {
    if (DEPLOY_KEY_CONTRACT.has(`${r.method} ${r.path}`)) return 'admitted';
    return r.auth.includes('operator') ? [401, 'invalid_key'] : [403, 'deploy_key_scope'];
  }
  if (!r.auth.includes(SCHEME[cred] as never)) return [401, 'invalid_key'];
  if (r.admin && cred === 'member') return [403, 'forbidden'];
  return 'admitted';
}

const bearerRoutes = routes.filter((r) => !r.auth.some((a) => a === 'none' || a === 'signature' || a === 'writeKey'));

t.test('every bearer route is in the matrix', async (t) => {
  t.ok(bearerRoutes.length > 60, `${bearerRoutes.length} routes`);
  for (const key of DEPLOY_KEY_CONTRACT) t.ok(bearerRoutes.some((r) => `${r.method} ${r.path}` === key), `${key} exists`);
});

for (const cred of Object.keys(TOKENS) as Cred[]) {
  t.test(`${cred}: admitted where the contract says, refused elsewhere`, async (t) => {
    for (const r of bearerRoutes) {
      // The operator's own routes change the service (orgs, reconcile): its admission there is auth.test's.
      if (cred === 'operator' && r.auth.includes('operator')) continue;
      // Admitted, it would revoke this test's own sessions: credentials.test covers its admission.
      if (r.method === 'POST' && r.path === '/v1/sessions/revoke' && expected(cred, r) === 'admitted') continue;
      const path = r.path.replace(/\{[^}]+\}/g, 'matrix-placeholder') + (r.path.startsWith('/v1/artifacts/') ? '?kind=bundle' : '');
      const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? { data: {} } : undefined;
      const res = await call(s.url, r.method, path, { token: TOKENS[cred], body });
      const want = expected(cred, r);
      const what = `${cred} on ${r.method} ${r.path}`;
      if (want === 'admitted') {
        t.ok(res.status !== 401 && !(res.status === 403 && ['forbidden', 'deploy_key_scope'].includes(res.body?.error?.code)),
          `${what}: admitted (${res.status} ${res.body?.error?.code ?? ''})`);
      } else if (r.method === 'HEAD') {
        t.equal(res.status, want[0], `${what}: ${want[0]}`);
      } else {
        t.same([res.status, res.body?.error?.code], want, `${what}: ${want.join(' ')}`);
      }
    }
  });
}

t.test('the deploy key reads no e-mail: recipients and bodies are outside its scope', async (t) => {
  for (const path of ['/v1/emails', '/v1/emails/eml_x']) {
    const r = await call(s.url, 'GET', path, { token: org.deployKey });
    t.same([r.status, r.body.error.code], [403, 'deploy_key_scope'], path);
  }
});
