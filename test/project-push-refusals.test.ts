// `headwater push` against a real service (embedded, or PostgreSQL/NATS when set): progress only on
// a terminal, what the service refuses (credentials, apps) as one line, and a journey that builds
// here but fails the service's compile: its error at its file, and exit 1.
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { BIN, hw, initProject, oneLineFailure } from './helpers/cli.js';
import { startServer, createAppFixture } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

t.test('push: progress only on a terminal; credentials and apps the service refuses are one line', async (t) => {
  const f = await createAppFixture(s);
  const dir = await initProject(t);

  // On a terminal (script(1) gives the command a pseudo-terminal) progress lines go to stderr.
  const script = existsSync('/usr/bin/script') ? '/usr/bin/script' : undefined;
  if (script) {
    const onTty = (extra: string) => new Promise<string>((resolve) => {
      const cmd = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} push ${JSON.stringify(dir)} --app ${f.app.id} --url ${s.url} --token ${f.admin} ${extra}`;
      execFile(script, ['-qec', cmd, '/dev/null'], (_err, stdout) => resolve(String(stdout)));
    });
    const tty = await onTty('');
    t.match(tty, /bundled 2 files in \d+ ms/, 'files bundled');
    t.match(tty, /artifacts: 3 uploaded, 0 already stored/, 'artifacts uploaded');
    t.match(tty, /: 2 new versions; 3 artifacts uploaded/, 'the push');
    const ttyJson = await onTty('--json');
    t.notMatch(ttyJson, /bundled|artifacts:/, '--json: no progress even on a terminal');
    t.match(ttyJson, /"versions": \[\]/);
  } else t.pass('script(1) is not installed: no pseudo-terminal to test on', { skip: true });

  const run = (token: string, app = f.app.id) => hw(['push', dir, '--app', app, '--url', s.url, '--token', token]);
  oneLineFailure(t, await run('hwt_not_a_real_token'), /refused the credential taken from --token \(401 invalid_key/, 'unknown token');
  oneLineFailure(t, await run(f.org.apiKey), /an ingestion API key cannot push/, 'an ingestion key');
  oneLineFailure(t, await run(f.org.deployKey), /a deploy key cannot push/, 'a deploy key');
  oneLineFailure(t, await run(f.admin, 'app_does_not_exist'), /POST \/v1\/pushes failed: 422 validation_failed/, 'an unknown app');
  const other = await createAppFixture(s);
  oneLineFailure(t, await run(f.admin, other.app.id), /422 validation_failed/, "another org's app");
});

t.test('push: a journey the service fails to compile is shown failed at its file, exit 1', async (t) => {
  const f = await createAppFixture(s);
  const dir = await initProject(t);
  // It builds and evaluates here (Node has Intl), but the service's sandbox (QuickJS) has no Intl:
  // loading the bundle there throws.
  const file = join(dir, 'journeys/welcome.ts');
  writeFileSync(file, readFileSync(file, 'utf8') + `\nexport const price = new Intl.NumberFormat('en').format(1);\n`);
  const r = await hw(['push', dir, '--app', f.app.id, '--url', s.url, '--token', f.admin]);
  t.equal(r.code, 1, 'exit 1');
  t.match(r.stdout, /^\s+journey\s+welcome\s+ver_\S+\s+failed: journeys\/welcome\.ts: bundle throws at load: \w*Error: .*Intl/m, `the compile error at its file (${r.stdout})`);
  t.match(r.stdout, /^\s+template\s+welcome-email\s+ver_\S+\s+ready$/m, 'the template beside it compiled');
  t.equal(r.stderr, 'headwater: 1 of 2 versions failed to compile: welcome\n', 'one line on stderr');
  const j = await hw(['journeys', '--url', s.url, '--token', f.admin]);
  t.match(j.stdout, /welcome .*latest version failed: bundle throws at load/, `headwater journeys shows it failed (${j.stdout}${j.stderr})`);
});
