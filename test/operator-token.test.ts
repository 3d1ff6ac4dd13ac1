// An operator token the operator chose works whatever its form (a Kubernetes secret, `openssl rand
// -hex 32`, a `hwo_` value), over HTTP and through `headwater org create`; a too-short one stops
// `serve` at start with one line.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { call, randomName } from './helpers/server.js';
import { BIN, serveBin, stopBin } from './helpers/serve.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'how the CLI picks its operator token');

const run = promisify(execFile);

const serve = (dataDir: string, token: string) =>
  serveBin(dataDir, { HEADWATER_OPERATOR_TOKEN: token, HEADWATER_STREAM_PREFIX: `o${randomBytes(4).toString('hex')}` });
const stop = stopBin;

const TOKENS: Array<[string, string]> = [
  ['hex, no prefix (openssl rand -hex 32)', randomBytes(32).toString('hex')],
  ['16 characters with symbols (a Kubernetes secret)', 'ab+/=cdefgh12345'],
  ['the generated form hwo_...', `hwo_${randomBytes(24).toString('base64url')}`],
  ['shaped like an API key (hwk_...)', `hwk_${randomBytes(20).toString('hex')}`],
  ['shaped like a session JWT (a.b.c)', `${randomBytes(8).toString('hex')}.${randomBytes(8).toString('hex')}.x`],
];

for (const [label, token] of TOKENS) {
  t.test(`operator token ${label}`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'hw-op-'));
    const p = await serve(dir, token);
    t.teardown(async () => { await stop(p); rmSync(dir, { recursive: true, force: true }); });

    const created = await call(p.url, 'POST', '/v1/orgs', { token, body: { data: { name: randomName() } } });
    t.equal(created.status, 201, 'POST /v1/orgs with the configured token');
    const orgId = created.body.data.org.id;
    const sess = await call(p.url, 'POST', `/v1/orgs/${orgId}/sessions`, { token, body: { data: { role: 'org:member' } } });
    t.equal(sess.status, 201, 'operator session route too');

    const wrong = await call(p.url, 'POST', '/v1/orgs', { token: token.slice(0, -1) + (token.endsWith('x') ? 'y' : 'x'), body: { data: { name: 'x' } } });
    t.equal(wrong.status, 401, 'a token differing in its last character is refused');
    t.equal(wrong.body.error.code, 'invalid_key');

    // An org credential is still not an operator credential.
    const asKey = await call(p.url, 'POST', '/v1/orgs', { token: created.body.data.apiKey, body: { data: { name: 'x' } } });
    t.equal(asKey.status, 401);

    const { stdout } = await run(process.execPath, [BIN, 'org', 'create', '--name', 'via-cli', '--url', p.url, '--token', token]);
    t.equal(JSON.parse(stdout).data.org.name, 'via-cli', 'headwater org create --token');
    const viaEnv = await run(process.execPath, [BIN, 'org', 'create', '--name', 'via-env', '--url', p.url],
      { env: { ...process.env, HEADWATER_OPERATOR_TOKEN: token } });
    t.equal(JSON.parse(viaEnv.stdout).data.org.name, 'via-env', 'headwater org create with HEADWATER_OPERATOR_TOKEN');
  });
}

t.test('a too-short operator token stops serve with one line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-op-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const err = await serve(dir, 'short-secret').then(() => null, (e) => e);
  t.ok(err, 'serve did not start');
  t.equal(err.code, 2, 'exit code 2');
  const lines = String(err.stderr).trim().split('\n');
  t.equal(lines.length, 1, 'one line');
  t.match(lines[0], /HEADWATER_OPERATOR_TOKEN is 12 characters; use at least 16/);
  t.notMatch(err.stderr, /at .*\.js:\d+/, 'no stack trace');
});
