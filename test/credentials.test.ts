// Key rotation, session revocation and dashboard login links (README "Credentials: rotation, revocation, push authors"),
// through HTTP: a rotated key works through its grace period and answers 401 after it, a revoked
// session answers 401, members get 403 on both routes, and a login link is exchanged once for a
// session and refused when expired, used or revoked.
import t from 'tap';
import { call, createOrg, expectError, poll, signSession, startServer } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const me = (token: string) => call(s.url, 'GET', '/v1/users/me', { token });
const rotate = (token: string, data: unknown) => call(s.url, 'POST', '/v1/credentials/rotate', { token, body: { data } });
const revoke = (token: string) => call(s.url, 'POST', '/v1/sessions/revoke', { token });
const mint = async (orgId: string, role: string) => {
  const r = await call(s.url, 'POST', `/v1/orgs/${orgId}/sessions`, { token: s.operatorToken, body: { data: { role } } });
  if (r.status !== 201) throw new Error(`session not issued: ${r.text}`);
  return r.body.data.token as string;
};

t.test('a rotated key works through its grace period, then answers 401', async (t) => {
  const org = await createOrg(s);
  const before = Date.now();
  const r = await rotate(org.sessions.admin, { kind: 'apiKey', graceSeconds: 2 });
  t.equal(r.status, 200, r.text);
  t.same(Object.keys(r.body.data).sort(), ['expiresOldAt', 'kind', 'secret']);
  t.equal(r.body.data.kind, 'apiKey');
  t.match(r.body.data.secret, /^hwk_/);
  const ends = Date.parse(r.body.data.expiresOldAt);
  t.ok(ends >= before + 2000 && ends <= Date.now() + 2000, 'expiresOldAt is now + graceSeconds');
  t.equal((await me(org.apiKey)).status, 200, 'the old key works inside the grace period');
  t.match((await me(r.body.data.secret)).body.data, { orgId: org.org.id, scheme: 'apiKey' }, 'the new key works at once');
  const gone = await poll(() => me(org.apiKey), (x) => x.status === 401, 10_000);
  expectError(t, gone, 401, 'invalid_key', 'the old key after expiresOldAt');
  t.ok(Date.now() >= ends, 'not refused before expiresOldAt');
  t.equal((await me(r.body.data.secret)).status, 200, 'the new key still works');
});

t.test('graceSeconds 0 (the default) ends the old key at once; each kind rotates alone', async (t) => {
  const org = await createOrg(s);
  const dep = await rotate(org.sessions.admin, { kind: 'deployKey', graceSeconds: 0 });
  t.equal(dep.status, 200, dep.text);
  t.match(dep.body.data.secret, /^hwd_/);
  expectError(t, await me(org.deployKey), 401, 'invalid_key', 'old deploy key');
  t.equal((await call(s.url, 'GET', '/v1/executions', { token: dep.body.data.secret })).status, 200, 'the new deploy key works on its routes');
  const pipe = await rotate(org.sessions.admin, { kind: 'pipelineKey' });
  t.equal(pipe.status, 200, pipe.text);
  t.match(pipe.body.data.secret, /^hwp_/);
  t.ok(Date.parse(pipe.body.data.expiresOldAt) <= Date.now(), 'no grace by default');
  expectError(t, await me(org.pipelineKey), 401, 'invalid_key', 'old pipeline key');
  t.equal((await me(pipe.body.data.secret)).status, 200, 'new pipeline key');
  t.equal((await me(org.apiKey)).status, 200, 'the API key, not rotated, still works');
  // A second rotation with a long grace does not revive or extend a key already ended.
  const again = await rotate(org.sessions.admin, { kind: 'pipelineKey', graceSeconds: 3600 });
  t.equal(again.status, 200);
  expectError(t, await me(org.pipelineKey), 401, 'invalid_key', 'the first pipeline key stays ended');
  t.equal((await me(pipe.body.data.secret)).status, 200, 'the second one works through its grace');
});

t.test('a revoked session answers 401; new sessions and keys work', async (t) => {
  const org = await createOrg(s);
  const other = await createOrg(s);
  const r = await revoke(org.sessions.admin);
  t.equal(r.status, 200, r.text);
  t.same(Object.keys(r.body.data), ['revokedBefore']);
  t.ok(Math.abs(Date.parse(r.body.data.revokedBefore) - Date.now()) < 60_000, 'revokedBefore is now');
  expectError(t, await me(org.sessions.admin), 401, 'invalid_key', 'the revoking admin session');
  expectError(t, await me(org.sessions.member), 401, 'invalid_key', 'the member session');
  expectError(t, await call(s.url, 'GET', '/v1/segments', { token: org.sessions.member }), 401, 'invalid_key', 'on a dashboard read');
  const fresh = await mint(org.org.id, 'org:admin');
  t.match((await me(fresh)).body.data, { orgId: org.org.id, role: 'org:admin' }, 'a session minted right after works');
  // Minted in the cut-off's own millisecond (it may have come before the revocation): refused; one
  // millisecond later: not. Signed with the service's key (the data directory holds it, when it does).
  const at = Date.parse(r.body.data.revokedBefore);
  const same = await signSession(s, { org: org.org.id, role: 'org:admin', iat_ms: at });
  const next = await signSession(s, { org: org.org.id, role: 'org:admin', iat_ms: at + 1 });
  if (same && next) {
    expectError(t, await me(same), 401, 'invalid_key', 'a session of the cut-off\'s millisecond');
    t.equal((await me(next)).status, 200, 'a session of the next millisecond works');
  }
  t.equal((await me(org.apiKey)).status, 200, 'keys are not sessions: the API key works');
  t.equal((await me(other.sessions.member)).status, 200, 'another org\'s sessions are untouched');
});

t.test('members may neither rotate nor revoke (403); other credentials are refused', async (t) => {
  const org = await createOrg(s);
  expectError(t, await rotate(org.sessions.member, { kind: 'apiKey' }), 403, 'forbidden', 'member rotate');
  expectError(t, await revoke(org.sessions.member), 403, 'forbidden', 'member revoke');
  expectError(t, await rotate(org.deployKey, { kind: 'apiKey' }), 403, 'deploy_key_scope', 'deploy key rotate');
  expectError(t, await revoke(org.deployKey), 403, 'deploy_key_scope', 'deploy key revoke');
  expectError(t, await rotate(org.apiKey, { kind: 'apiKey' }), 401, 'invalid_key', 'API key rotate');
  expectError(t, await rotate(org.pipelineKey, { kind: 'pipelineKey' }), 401, 'invalid_key', 'pipeline key rotate');
  expectError(t, await revoke(s.operatorToken), 401, 'invalid_key', 'operator revoke');
  t.equal((await me(org.sessions.admin)).status, 200, 'nothing was revoked');
  t.equal((await me(org.apiKey)).status, 200, 'nothing was rotated');
});

t.test('bad rotation input is 422 validation_failed naming the field', async (t) => {
  const org = await createOrg(s);
  const bad: Array<[string, unknown, string]> = [
    ['graceSeconds over 86400', { kind: 'apiKey', graceSeconds: 86401 }, '/data/graceSeconds'],
    ['graceSeconds negative', { kind: 'apiKey', graceSeconds: -1 }, '/data/graceSeconds'],
    ['graceSeconds fractional', { kind: 'apiKey', graceSeconds: 1.5 }, '/data/graceSeconds'],
    ['graceSeconds a string', { kind: 'apiKey', graceSeconds: '60' }, '/data/graceSeconds'],
    ['kind unknown', { kind: 'operator' }, '/data/kind'],
    ['kind a number', { kind: 1 }, '/data/kind'],
    ['kind missing', { graceSeconds: 5 }, '/data/kind'],
  ];
  for (const [what, data, field] of bad) expectError(t, await rotate(org.sessions.admin, data), 422, 'validation_failed', what, field);
  t.equal((await me(org.apiKey)).status, 200, 'the key was not rotated');
});

t.test('a login link is exchanged once for a session; expired, used or revoked ones are 401', async (t) => {
  const org = await createOrg(s);
  const link = (role = 'org:admin') => call(s.url, 'POST', `/v1/orgs/${org.org.id}/login-links`, { token: s.operatorToken, body: { data: { role, userId: 'usr_dash' } } });
  const exchange = (loginToken: string) => call(s.url, 'POST', '/v1/sessions/exchange', { body: { data: { loginToken } } });
  const l = await link();
  t.equal(l.status, 201, l.text);
  t.equal(l.body.data.role, 'org:admin');
  const ttl = Date.parse(l.body.data.expiresAt) - Date.now();
  t.ok(ttl > 0 && ttl <= 5 * 60_000, `lives minutes (${Math.round(ttl / 1000)} s)`);
  expectError(t, await me(l.body.data.loginToken), 401, 'invalid_key', 'a login token is no session');
  const x = await exchange(l.body.data.loginToken);
  t.equal(x.status, 201, x.text);
  t.match(x.body.data, { role: 'org:admin', token: String });
  t.ok(Date.parse(x.body.data.expiresAt) > Date.parse(l.body.data.expiresAt), 'the session outlives the link');
  t.match((await me(x.body.data.token)).body.data, { orgId: org.org.id, scheme: 'session', role: 'org:admin', userId: 'usr_dash' });
  expectError(t, await exchange(l.body.data.loginToken), 401, 'invalid_key', 'the same link twice');

  // An expired link, signed with the service's own key (the embedded data directory holds it).
  const now = Math.floor(Date.now() / 1000);
  const expired = await signSession(s, { org: org.org.id, role: 'org:admin', use: 'login', jti: 'lnk_expired' }, { expiresAt: now - 1 });
  if (expired) expectError(t, await exchange(expired), 401, 'invalid_key', 'an expired link');
  expectError(t, await exchange(org.sessions.admin), 401, 'invalid_key', 'a session is not a login link');
  expectError(t, await exchange('not.a.jwt'), 401, 'invalid_key', 'garbage');

  const pending = await link('org:member');
  t.equal((await revoke(org.sessions.admin)).status, 200);
  expectError(t, await exchange(pending.body.data.loginToken), 401, 'invalid_key', 'a link issued before a revocation');
  const after = await link('org:member');
  const y = await exchange(after.body.data.loginToken);
  t.equal(y.status, 201, 'a link issued after the revocation works');
  t.equal((await me(y.body.data.token)).body.data.role, 'org:member');

  expectError(t, await call(s.url, 'POST', `/v1/orgs/${org.org.id}/login-links`, { token: y.body.data.token, body: { data: { role: 'org:admin' } } }), 401, 'invalid_key', 'a session cannot issue links');
  expectError(t, await call(s.url, 'POST', '/v1/orgs/org_nope/login-links', { token: s.operatorToken, body: { data: { role: 'org:admin' } } }), 404, 'not_found', 'unknown org');
});
