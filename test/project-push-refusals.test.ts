// `headwater push` against a real service (embedded, or PostgreSQL/NATS when set): progress only on
// a terminal, and what the service refuses (credentials, apps) as one line.
import t from 'tap';
import { existsSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { BIN, hw, initProject, oneLineFailure } from './helpers/cli.js';
import { startServer, createAppFixture } from './helpers/server.js';

t.test('push: progress only on a terminal; credentials and apps the service refuses are one line', async (t) => {
  const s = await startServer();
  t.teardown(() => s.close());
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
