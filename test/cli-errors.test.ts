// The command line's failures as a user meets them: each is one line on stderr starting with
// "headwater:", no stack trace, and the exit code the README documents (1 the work failed, 2 wrong
// usage or credential missing, 3 serve could not start). The server is an embedded child process
// in both CI modes, so the data-directory lock and the port checks are the embedded ones.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort, hw, oneLineFailure } from './helpers/cli.js';
import { serveBin, stopBin } from './helpers/serve.js';
import { EMBEDDED_ENV, embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'CLI and start-up errors, on embedded servers of its own');

const EMBEDDED = EMBEDDED_ENV;
const OPERATOR = 'hwo_cli-errors-operator-token-0123456789';

const tmp = (t: { teardown(fn: () => void): void }, p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

t.test('CLI and start-up errors are one line with a documented exit code', async (t) => {
  const dir = tmp(t, 'hw-clierr-');
  // The server runs with HEADWATER_OPERATOR_TOKEN set; the data dir of `stale` holds an old
  // generated token, as after a start without the variable.
  const server = await serveBin(dir, { ...EMBEDDED, HEADWATER_OPERATOR_TOKEN: OPERATOR });
  t.teardown(() => stopBin(server));
  const stale = tmp(t, 'hw-clierr-stale-');
  writeFileSync(join(stale, 'operator-token'), 'hwo_an-old-generated-token-from-an-earlier-start\n');
  const down = `http://127.0.0.1:${await closedPort()}`;
  const port = Number(new URL(server.url).port);
  const clean = { HEADWATER_OPERATOR_TOKEN: '', HEADWATER_TOKEN: '', HEADWATER_URL: '', HEADWATER_DATA_DIR: '' };

  const cases: Array<{ what: string; args: string[]; env?: Record<string, string>; code: number; line: RegExp }> = [
    { what: 'server down', args: ['org', 'create', '--name', 'x', '--url', down, '--token', OPERATOR], code: 1,
      line: /cannot reach the service at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED .*HEADWATER_URL/ },
    { what: 'wrong operator token', args: ['org', 'create', '--name', 'x', '--url', server.url, '--token', 'hwo_wrong-token-0123456789'], code: 1,
      line: /refused the operator token taken from --token \(401 \w+.*\): this command needs the server's operator token/ },
    { what: 'stale generated token file', args: ['org', 'create', '--name', 'x', '--url', server.url, '--data-dir', stale], code: 1,
      line: /taken from \S+operator-token .*set the same HEADWATER_OPERATOR_TOKEN here/ },
    { what: 'no operator token anywhere', args: ['org', 'create', '--name', 'x', '--url', server.url, '--data-dir', join(stale, 'nowhere')], code: 2,
      line: /no operator token: pass --token, set HEADWATER_OPERATOR_TOKEN/ },
    { what: 'login without --org', args: ['login', '--url', server.url, '--token', OPERATOR], code: 2, line: /login needs --org ORG_ID/ },
    { what: 'org command without a credential', args: ['journeys', '--url', server.url], code: 2, line: /no credential: pass --token or set HEADWATER_TOKEN/ },
    { what: 'wrong org token', args: ['executions', '--url', server.url, '--token', 'not-a-session'], code: 1,
      line: /refused the credential taken from --token \(401 .*\): this command needs an org session token/ },
    { what: 'wrong org token from the environment', args: ['journeys', '--url', server.url], env: { HEADWATER_TOKEN: 'not-a-session' }, code: 1,
      line: /taken from HEADWATER_TOKEN/ },
    { what: 'unknown option', args: ['executions', '--frobnicate'], code: 2, line: /executions: Unknown option '--frobnicate'/ },
    { what: 'enable without a key', args: ['enable'], code: 2, line: /enable needs exactly one journey key/ },
    { what: 'unknown execution', args: ['execution', 'exe_nope', '--url', server.url, '--token', OPERATOR], code: 1, line: /GET \/v1\/executions\/exe_nope failed: 401|refused/ },
    { what: 'port served by another headwater', args: ['serve', '--port', String(port), '--host', '127.0.0.1', '--data-dir', tmp(t, 'hw-clierr-2-')], env: EMBEDDED, code: 3,
      line: new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use \\(another headwater already serves http://127\\.0\\.0\\.1:${port}\\); .*PORT or --port`) },
    { what: 'second process on the same data dir', args: ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], env: EMBEDDED, code: 3,
      line: /embedded \w+ in .* is in use by process \d+/ },
    { what: 'embedded cache too small', args: ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', tmp(t, 'hw-clierr-3-'), '--embedded-cache-mb', '8'], env: EMBEDDED, code: 2,
      line: /--embedded-cache-mb \/ HEADWATER_EMBEDDED_CACHE_MB must be 16 to 4096, got 8/ },
    { what: 'embedded cache too large', args: ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', tmp(t, 'hw-clierr-4-')], env: { ...EMBEDDED, HEADWATER_EMBEDDED_CACHE_MB: '5000' }, code: 2,
      line: /--embedded-cache-mb \/ HEADWATER_EMBEDDED_CACHE_MB must be 16 to 4096, got 5000/ },
  ];
  for (const c of cases) {
    const r = await hw(c.args, { ...clean, HEADWATER_LOG_LEVEL: 'warn', ...c.env });
    t.equal(r.code, c.code, `${c.what}: exit ${c.code} (${r.stderr.trim()})`);
    oneLineFailure(t, r, c.line, c.what);
  }

  // The rule's other half: the environment variable wins over a stale file.
  const ok = await hw(['org', 'create', '--name', 'env-wins', '--url', server.url, '--data-dir', stale], { ...clean, HEADWATER_OPERATOR_TOKEN: OPERATOR });
  t.equal(ok.code, 0, `HEADWATER_OPERATOR_TOKEN wins over the file (${ok.stderr})`);
  t.equal(JSON.parse(ok.stdout).data.org.name, 'env-wins');

  // --verbose adds the stack trace, after the same first line.
  const v = await hw(['org', 'create', '--name', 'x', '--url', down, '--token', OPERATOR, '--verbose'], clean);
  t.equal(v.code, 1);
  t.match(v.stderr.split('\n')[0], /^headwater: cannot reach the service/);
  t.match(v.stderr, /\n\s+at /, '--verbose prints the stack');
});

t.test('a port another program holds: one line, exit 3, before any store opens', async (t) => {
  // Not HTTP: it drops every connection (serve's probe for a headwater there gets no answer).
  const holder = createServer((sock) => sock.destroy());
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => { holder.close(() => r()); }));
  const port = (holder.address() as { port: number }).port;
  const dir = tmp(t, 'hw-clierr-3-');
  const started = Date.now();
  const r = await hw(['serve', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dir], { ...EMBEDDED, HEADWATER_LOG_LEVEL: 'warn', HEADWATER_OPERATOR_TOKEN: OPERATOR });
  t.equal(r.code, 3, `exit 3 (${r.stderr})`);
  oneLineFailure(t, r, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use \\(another program listens on it\\)`), 'port held by another program');
  t.ok(Date.now() - started < 30_000, `fails without opening the stores (${Date.now() - started} ms)`);
});
