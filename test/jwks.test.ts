// Session tokens of an external identity provider: verified against its JWKS (served here on
// loopback), org and role read from the configured claims; tokens of other issuers or keys refused.
// HEADWATER_JWT_AUDIENCE is set: a token must name headwater's audience (a token the IdP minted for
// another application is refused).
import t from 'tap';
import http from 'node:http';
import { generateKeyPair, exportJWK, SignJWT } from 'jose';
import { call, createOrg, startServer } from './helpers/server.js';

const { publicKey, privateKey } = await generateKeyPair('RS256');
const other = await generateKeyPair('RS256');
const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
const jwks = http.createServer((_req, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ keys: [jwk] })); });
await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', () => r()));
const jwksUrl = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks.json`;
const ISSUER = 'https://idp.example.test';
const AUDIENCE = 'https://headwater.example.test';

const s = await startServer([], { HEADWATER_JWT_ISSUER: ISSUER, HEADWATER_JWKS_URL: jwksUrl, HEADWATER_JWT_ORG_CLAIM: 'o', HEADWATER_JWT_ROLE_CLAIM: 'r', HEADWATER_JWT_AUDIENCE: AUDIENCE });
t.teardown(async () => { await s.close(); jwks.close(); });
const org = await createOrg(s);

const sign = (claims: Record<string, unknown>, key = privateKey, iss = ISSUER, exp = '10m') =>
  new SignJWT({ aud: AUDIENCE, ...claims }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(iss).setSubject('user_ext_1')
    .setIssuedAt().setExpirationTime(exp).sign(key);

t.test('an external admin token works with its org and role', async (t) => {
  const token = await sign({ o: org.org.id, r: 'org:admin' });
  const me = await call(s.url, 'GET', '/v1/users/me', { token });
  t.equal(me.status, 200);
  t.same(me.body.data, { orgId: org.org.id, scheme: 'session', role: 'org:admin', userId: 'user_ext_1' });
  const created = await call(s.url, 'POST', '/v1/apps', { token, body: { data: { name: 'ext-app' } } });
  t.equal(created.status, 201);
  t.equal(created.body.data.orgId, org.org.id);
});

t.test('an external member token cannot mutate', async (t) => {
  const token = await sign({ o: org.org.id, r: 'org:member' });
  t.equal((await call(s.url, 'GET', '/v1/apps', { token })).status, 200);
  const r = await call(s.url, 'POST', '/v1/apps', { token, body: { data: { name: 'nope' } } });
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'forbidden');
});

t.test('refused: wrong key, wrong issuer, expired, missing claims, bad role', async (t) => {
  const cases: Array<[string, Promise<string>]> = [
    ['signed by another key', sign({ o: org.org.id, r: 'org:admin' }, other.privateKey)],
    ['untrusted issuer', sign({ o: org.org.id, r: 'org:admin' }, privateKey, 'https://evil.example.test')],
    ['expired', sign({ o: org.org.id, r: 'org:admin' }, privateKey, ISSUER, '-1m')],
    ['no org claim', sign({ r: 'org:admin' })],
    ['unknown role', sign({ o: org.org.id, r: 'owner' })],
    ['no audience', sign({ o: org.org.id, r: 'org:admin', aud: undefined })],
    ['another application\'s audience', sign({ o: org.org.id, r: 'org:admin', aud: 'https://crm.example.test' })],
    ['audience list without headwater', sign({ o: org.org.id, r: 'org:admin', aud: ['https://crm.example.test', 'https://wiki.example.test'] })],
  ];
  for (const [name, p] of cases) {
    const r = await call(s.url, 'GET', '/v1/apps', { token: await p });
    t.equal(r.status, 401, name);
    t.equal(r.body.error.code, 'invalid_key', name);
  }
});

t.test('an audience list that names headwater is accepted', async (t) => {
  const token = await sign({ o: org.org.id, r: 'org:member', aud: ['https://crm.example.test', AUDIENCE] });
  t.equal((await call(s.url, 'GET', '/v1/users/me', { token })).status, 200);
});
