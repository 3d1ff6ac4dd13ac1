// The `headwater` command: serve, worker, org create, login, doctor, the journey commands and the
// project tool (init, push). Every failure is one line on stderr and a documented exit code
// (README "The command line"): 1 the work failed, 2 wrong usage or configuration, 3 serve could
// not start. A stack trace is printed only with --verbose or HEADWATER_LOG_LEVEL=debug.
import { join } from 'node:path';
import { loadConfig, configHelp, ConfigError } from '../api/config.js';
import { createLogger, type Logger } from '../lib/log.js';
import { exitOrKill } from '../lib/exit.js';
import { callApi, CliError, flag, operatorTarget } from './request.js';
import { JOURNEY_HELP, runJourneyCommand } from './journeys.js';

const USAGE = `usage: headwater <command> [options]

commands:
  serve                      run the service (embedded stores unless DATABASE_URL / NATS_URL / CLICKHOUSE_URL are set)
  worker                     run ingestion workers alone (needs DATABASE_URL and NATS_URL; lands events too when CLICKHOUSE_URL is set)
  org create --name NAME     create an organization and print its credentials (JSON)
             [--url URL]     service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
             [--token T]     operator token (default $HEADWATER_OPERATOR_TOKEN, else <data dir>/operator-token)
             [--data-dir D]  where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)
  login --org ORG_ID         print a short-lived, single-use dashboard login link (org:admin; "dashboard" is the same)
             [--url URL] [--token T] [--data-dir D]   (as for org create)
  doctor [--since 24h]       check that every acknowledged event is in the event store (--repair lands missing ones)
  init DIR                   scaffold a journey project (headwater.json, journeys/, templates/)
  push [DIR] --app APP_ID    build a journey project, push it to an app and wait for the compile results
             [--url URL] [--token T] [--json] [--no-wait]
  push ... --check [--force]  first replay running journeys' journals against the changed code (refuse, or --force)
  replay [DIR] --journey KEY replay a journey's latest executions' journals against the local code
  test [DIR]                 run the project's *.test.ts|js files (node:test, headwater/sdk/testing)
  types [DIR] [--out FILE]   write TypeScript types of the org's tracking plan
  journeys                   list journeys: on/off, trigger, latest version status
  enable KEY / disable KEY   turn a journey on / off
  executions                 list executions [--journey KEY] [--status S]
  execution ID               print an execution with its journal

credentials: operator commands (org create, login, doctor) use --token, else $HEADWATER_OPERATOR_TOKEN,
else the token the server generated into its data dir (--data-dir, else $HEADWATER_DATA_DIR, else
./.headwater). Org commands (push, journeys, enable, disable, executions, execution) use --token,
else $HEADWATER_TOKEN (a session token; push also takes the pipeline key).

exit codes: 0 done; 1 the work failed (refused, unreachable, compile failed); 2 wrong command line
or configuration; 3 serve could not start (port in use, data directory held by another process).
errors are one line; --verbose or HEADWATER_LOG_LEVEL=debug adds the stack trace.
every command takes --help.

run "headwater serve --help" for the service's settings.`;

const OPERATOR_TOKEN_RULE = `  --token T       operator token (default $HEADWATER_OPERATOR_TOKEN, else <data dir>/operator-token,
                  the token a server started without HEADWATER_OPERATOR_TOKEN generated)`;

const ORG_CREATE_HELP = `usage: headwater org create --name NAME [--url URL] [--token T] [--data-dir D]

Creates an organization (operator route POST /v1/orgs) and prints its credentials as JSON:
apiKey, deployKey, pipelineKey and two session tokens, shown only this once.

  --name NAME     organization name, 1 to 100 characters (required)
  --url URL       service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
${OPERATOR_TOKEN_RULE}
  --data-dir D    where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)`;

const DASHBOARD_HELP = `usage: headwater login --org ORG_ID [--url URL] [--token T] [--data-dir D]

Issues a login link for an org:admin of the org (operator route POST /v1/orgs/{orgId}/login-links)
and prints URL/ui/#login=... The dashboard trades it once for a session (POST /v1/sessions/exchange)
that stays in the browser tab's session storage. The link works once and expires after 5 minutes;
until then it is a credential, so share it as one.

  --org ORG_ID    the organization (required)
  --url URL       service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
${OPERATOR_TOKEN_RULE}
  --data-dir D    where to find the generated operator token (default $HEADWATER_DATA_DIR or ./.headwater)

"headwater dashboard" is the same command.`;

/**
 * A graceful stop that has not finished after --shutdown-seconds exits anyway (status 1), before a
 * supervisor's own limit kills it without a word. Stopping there is a crash the stores recover
 * from: unacknowledged stream messages are delivered again and answers the store holds are kept.
 */
function exitAfter(seconds: number, log: Logger, notClosed: () => string[]) {
  setTimeout(() => {
    log.error('shutdown did not finish in time; exiting', { afterSeconds: seconds, notClosed: notClosed() });
    exitOrKill(1);
  }, seconds * 1000).unref();
}

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
    exitAfter(config.shutdownSeconds, log, svc.notClosed);
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
    exitAfter(config.shutdownSeconds, log, w.notClosed);
    await w.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

async function dashboard(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(DASHBOARD_HELP + '\n'); return; }
  const org = flag(argv, '--org');
  if (!org) throw new CliError('login needs --org ORG_ID (the org id from org create)', 2);
  const t = operatorTarget(argv);
  const body = await callApi<{ data: { loginToken: string } }>(t, 'POST', `/v1/orgs/${encodeURIComponent(org)}/login-links`, { role: 'org:admin' });
  process.stdout.write(`${t.url}/ui/#login=${encodeURIComponent(body.data.loginToken)}\n`);
}

async function orgCreate(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(ORG_CREATE_HELP + '\n'); return; }
  const name = flag(argv, '--name');
  if (!name) throw new CliError('org create needs --name NAME', 2);
  const body = await callApi(operatorTarget(argv), 'POST', '/v1/orgs', { name });
  process.stdout.write(JSON.stringify(body) + '\n');
}

async function main(argv: string[]) {
  const [cmd, sub, ...rest] = argv;
  if (cmd === 'serve') return serve(argv.slice(1));
  if (cmd === 'worker') return worker(argv.slice(1));
  if (cmd === 'org' && sub === 'create') return orgCreate(rest);
  if (cmd === 'dashboard' || cmd === 'login') return dashboard(argv.slice(1));
  if (cmd && cmd in JOURNEY_HELP) { process.exitCode = await runJourneyCommand(cmd, argv.slice(1)); return; }
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
    const project = await import('./project/commands.js');
    process.exitCode = await (cmd === 'init' ? project.runInit : project.runPush)(argv.slice(1));
    return;
  }
  if (!cmd || cmd === 'help' || cmd === '--help' || cmd === '-h') { process.stdout.write(USAGE + '\n'); return; }
  process.stderr.write(`headwater: unknown command "${argv.join(' ')}"\n\n${USAGE}\n`);
  process.exitCode = 2;
}

const verbose = process.argv.includes('--verbose') || process.env.HEADWATER_LOG_LEVEL === 'debug';

/** The exit code of a failure: 2 usage or configuration, 3 a start-up refusal, else 1. */
function exitCodeOf(err: unknown): number {
  if (err instanceof ConfigError) return 2;
  if (err instanceof CliError) return err.exitCode;
  const code = (err as { exitCode?: unknown })?.exitCode;
  return typeof code === 'number' ? code : 1;
}

main(process.argv.slice(2).filter((a) => a !== '--verbose')).catch((err) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`headwater: ${message.split('\n')[0]}\n`);
  if (verbose && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
  process.exit(exitCodeOf(err));
});
