// The `headwater` command: serve, worker, org create, and the project tool (init, push).
import { readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig, configHelp, ConfigError } from '../api/config.js';
import { createLogger } from '../lib/log.js';

const USAGE = `usage: headwater <command> [options]

commands:
  serve                      run the service (embedded stores unless DATABASE_URL / NATS_URL / CLICKHOUSE_URL are set)
  worker                     run ingestion workers alone (needs DATABASE_URL and NATS_URL; lands events too when CLICKHOUSE_URL is set)
  org create --name NAME     create an organization and print its credentials (JSON)
             [--url URL]     service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
             [--token T]     operator token (default $HEADWATER_OPERATOR_TOKEN, else <data dir>/operator-token)
             [--data-dir D]  where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)
  dashboard --org ORG_ID     print a short-lived, single-use dashboard login link (org:admin)
             [--url URL] [--token T] [--data-dir D]   (as for org create)
  doctor [--since 24h]       check that every acknowledged event is in the event store (--repair lands missing ones)
  init DIR                   scaffold a journey project (headwater.json, journeys/, templates/)
  push [DIR] --app APP_ID    build a journey project and push it to an app
             [--url URL] [--token T] [--json]
  push ... --check [--force]  first replay running journeys' journals against the changed code (refuse, or --force)
  replay [DIR] --journey KEY replay a journey's latest executions' journals against the local code
  test [DIR]                 run the project's *.test.ts|js files (node:test, headwater/sdk/testing)
  types [DIR] [--out FILE]   write TypeScript types of the org's tracking plan

every command takes --help.

run "headwater serve --help" for the service's settings.`;

const ORG_CREATE_HELP = `usage: headwater org create --name NAME [--url URL] [--token T] [--data-dir D]

Creates an organization (operator route POST /v1/orgs) and prints its credentials as JSON:
apiKey, deployKey, pipelineKey and two session tokens, shown only this once.

  --name NAME     organization name, 1 to 100 characters (required)
  --url URL       service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T       operator token (default $HEADWATER_OPERATOR_TOKEN, else <data dir>/operator-token)
  --data-dir D    where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)`;

const DASHBOARD_HELP = `usage: headwater dashboard --org ORG_ID [--url URL] [--token T] [--data-dir D]

Issues a login link for an org:admin of the org (operator route POST /v1/orgs/{orgId}/login-links)
and prints URL/ui/#login=... The dashboard trades it once for a session (POST /v1/sessions/exchange)
that stays in the browser tab's session storage. The link works once and expires after 5 minutes;
until then it is a credential, so share it as one.

  --org ORG_ID    the organization (required)
  --url URL       service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T       operator token (default $HEADWATER_OPERATOR_TOKEN, else <data dir>/operator-token)
  --data-dir D    where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)`;

async function serve(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(configHelp() + '\n'); return; }
  const config = loadConfig(argv);
  const log = createLogger(config.logLevel);
  const { startService } = await import('../api/service.js');
  const svc = await startService(config, log);
  if (svc.generatedOperatorToken) {
    // Printed once, on the start that generated it; it is kept in the data directory (mode 0600).
    process.stdout.write(`operator token (shown once; stored in ${join(config.dataDir, 'operator-token')}): ${svc.generatedOperatorToken}\n`);
  }
  process.stdout.write(`headwater listening on ${svc.url}\n`);
  let stopping = false;
  const stop = async (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal: sig });
    await svc.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

async function worker(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(configHelp().replace('headwater serve', 'headwater worker') + '\n'); return; }
  const config = loadConfig(argv);
  const log = createLogger(config.logLevel);
  const { runWorker } = await import('./worker.js');
  const w = await runWorker(config, log);
  process.stdout.write('headwater worker running\n');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await w.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i !== -1) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(name + '='));
  return eq?.slice(name.length + 1);
}

/** The service URL and operator token of an operator command (org create, dashboard). */
function operatorTarget(argv: string[]): { url: string; token: string } {
  const url = (flag(argv, '--url') ?? process.env.HEADWATER_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
  let token = flag(argv, '--token') ?? process.env.HEADWATER_OPERATOR_TOKEN;
  if (!token) {
    const file = join(resolve(flag(argv, '--data-dir') ?? process.env.HEADWATER_DATA_DIR ?? './.headwater'), 'operator-token');
    if (existsSync(file)) token = readFileSync(file, 'utf8').trim();
  }
  if (!token) throw new ConfigError('no operator token: pass --token or set HEADWATER_OPERATOR_TOKEN');
  return { url, token };
}

async function dashboard(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(DASHBOARD_HELP + '\n'); return; }
  const org = flag(argv, '--org');
  if (!org) throw new ConfigError('dashboard needs --org ORG_ID');
  const { url, token } = operatorTarget(argv);
  let res: Response;
  try {
    res = await fetch(`${url}/v1/orgs/${encodeURIComponent(org)}/login-links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { role: 'org:admin' } }),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } }).cause;
    throw new ConfigError(`cannot reach ${url}: ${cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? (err as Error).message}`);
  }
  const body = await res.json().catch(() => undefined) as { data?: { loginToken?: string }; error?: { code?: string; message?: string } } | undefined;
  if (!res.ok || typeof body?.data?.loginToken !== 'string') {
    const e = body?.error;
    throw new ConfigError(`login link not issued: ${res.status} ${e?.code ?? ''}${e?.message ? ': ' + e.message : ''}`.trim());
  }
  process.stdout.write(`${url}/ui/#login=${encodeURIComponent(body.data.loginToken)}\n`);
}

async function orgCreate(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(ORG_CREATE_HELP + '\n'); return; }
  const name = flag(argv, '--name');
  if (!name) throw new ConfigError('org create needs --name NAME');
  const { url, token } = operatorTarget(argv);
  const res = await fetch(`${url}/v1/orgs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data: { name } }),
  });
  const body = await res.text();
  process.stdout.write(body.endsWith('\n') ? body : body + '\n');
  if (!res.ok) process.exitCode = 1;
}

async function main(argv: string[]) {
  const [cmd, sub, ...rest] = argv;
  if (cmd === 'serve') return serve(argv.slice(1));
  if (cmd === 'worker') return worker(argv.slice(1));
  if (cmd === 'org' && sub === 'create') return orgCreate(rest);
  if (cmd === 'dashboard') return dashboard(argv.slice(1));
  if (cmd === 'doctor') {
    const { runDoctor } = await import('./doctor.js');
    process.exitCode = await runDoctor(argv.slice(1), (f) => operatorTarget([
      ...(f.url ? ['--url', f.url] : []), ...(f.token ? ['--token', f.token] : []), ...(f.dataDir ? ['--data-dir', f.dataDir] : []),
    ]));
    return;
  }
  // Authoring checks (docs/authoring.md): replay, test, types, and push --check / --force.
  if (cmd === 'replay' || cmd === 'test' || cmd === 'types' || (cmd === 'push' && (argv.includes('--check') || argv.includes('--force')))) {
    const { runAuthoring } = await import('./authoring/index.js');
    process.exitCode = await runAuthoring(cmd, argv.slice(1));
    return;
  }
  if (cmd === 'init' || cmd === 'push') {
    const project = await import('./project/index.js');
    process.exitCode = await (cmd === 'init' ? project.runInit : project.runPush)(argv.slice(1));
    return;
  }
  if (!cmd || cmd === 'help' || cmd === '--help' || cmd === '-h') { process.stdout.write(USAGE + '\n'); return; }
  process.stderr.write(`headwater: unknown command "${argv.join(' ')}"\n\n${USAGE}\n`);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof ConfigError) { process.stderr.write(`headwater: ${err.message}\n`); process.exit(2); }
  process.stderr.write(`headwater: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
