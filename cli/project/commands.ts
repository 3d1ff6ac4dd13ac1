// The project tool's commands as the command line sees them: arguments, help, output, exit code.
// Every failure is one line on stderr and a non-zero exit.
import { parseArgs } from 'node:util';
import { initProject } from './init.js';
import { oneLine } from './result.js';

export const INIT_HELP = `usage: headwater init DIR

Scaffolds a journey project in DIR (created if missing; refused unless empty):
  headwater.json              consent purposes the journeys run under
  journeys/welcome.ts         an example journey (headwater/sdk)
  templates/welcome-email.ts  the e-mail template it sends
  test/welcome.test.ts        a test of the journey (headwater test)
  README.md`;

export const PUSH_HELP = `usage: headwater push [DIR] --app APP_ID [--url URL] [--token T] [--json] [--no-wait]

Builds every journeys/*.ts|js and templates/*.ts|js of the project in DIR (default: the current
directory) into a bundle each, uploads the artifacts the org does not store yet, and creates a push:
a new version of each journey and template whose bundle changed. Then it waits until every new
version has compiled and prints each one's result (ready, or failed with the compile error and its
location); it exits 1 if any failed. Nothing is turned on: headwater enable KEY does that.

  --app APP_ID   the app the push belongs to (required)
  --url URL      service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T      a session token or the org pipeline key (default $HEADWATER_TOKEN)
  --json         print only the push as JSON on stdout (no progress)
  --no-wait      do not wait for the compile: print the versions as filed (compiling)`;

const DEFAULT_URL = 'http://127.0.0.1:8080';

function error(line: string, code = 1): number {
  process.stderr.write(`headwater: ${line}\n`);
  return code;
}

const INIT_OPTIONS = { help: { type: 'boolean', short: 'h' } } as const;
const PUSH_OPTIONS = {
  app: { type: 'string' }, url: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  'no-wait': { type: 'boolean' },
} as const;

/** parseArgs, with an unknown or malformed option as a one-line message instead of a throw. */
function parse<O extends typeof INIT_OPTIONS | typeof PUSH_OPTIONS>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    return oneLine(err);
  }
}

export async function runInit(argv: string[]): Promise<number> {
  const a = parse(argv, INIT_OPTIONS);
  if (typeof a === 'string') return error(`init: ${a}`, 2);
  if (a.values.help) { process.stdout.write(INIT_HELP + '\n'); return 0; }
  if (a.positionals.length !== 1) return error('init needs exactly one directory: headwater init DIR', 2);
  const dir = a.positionals[0]!;
  const r = initProject(dir);
  if (!r.ok) return error(r.error);
  process.stdout.write(`created ${dir}: ${r.value.join(', ')}\nnext: headwater push ${dir} --app APP_ID (in a headwater checkout: node bin/headwater.js push ...)\n`);
  return 0;
}

export async function runPush(argv: string[]): Promise<number> {
  const a = parse(argv, PUSH_OPTIONS);
  if (typeof a === 'string') return error(`push: ${a}`, 2);
  if (a.values.help) { process.stdout.write(PUSH_HELP + '\n'); return 0; }
  if (a.positionals.length > 1) return error('push takes one project directory', 2);
  const appId = a.values.app;
  if (!appId) return error('push needs --app APP_ID (the app the journeys belong to)', 2);
  const token = a.values.token || process.env.HEADWATER_TOKEN;
  const tokenFrom = a.values.token ? '--token' : 'HEADWATER_TOKEN';
  if (!token) return error('push needs a credential: pass --token or set HEADWATER_TOKEN (a session token or the pipeline key)', 2);
  const url = a.values.url || process.env.HEADWATER_URL || DEFAULT_URL;
  const json = a.values.json === true;
  const progress = !json && process.stderr.isTTY ? (line: string) => process.stderr.write(`${line}\n`) : undefined;
  try {
    // Loaded here: the bundler and packer behind it are not needed by `init` (half its start-up).
    const { pushProject } = await import('./push.js');
    const r = await pushProject({ dir: a.positionals[0] ?? '.', appId, url, token, tokenFrom, progress, wait: a.values['no-wait'] !== true });
    if (!r.ok) return error(r.error);
    const p = r.value.push;
    const failed = p.versions.filter((v) => v.status === 'failed');
    if (json) { process.stdout.write(JSON.stringify(p, null, 2) + '\n'); return failed.length ? 1 : 0; }
    const lines = [`push ${p.id} (#${p.seq}) to app ${p.appId}: ${p.versions.length} new version${p.versions.length === 1 ? '' : 's'}; ${r.value.uploaded} artifact${r.value.uploaded === 1 ? '' : 's'} uploaded, ${r.value.skipped} already stored`];
    for (const v of p.versions) {
      // A compile the service failed is placed at its project file (the build itself is the service's).
      const where = r.value.files[`${v.kind}:${v.key}`];
      const why = v.status === 'failed' && v.error ? `: ${where ? where + ': ' : ''}${v.error.replace(/\s*\n\s*/g, ' ')}` : '';
      lines.push(`  ${v.kind.padEnd(8)} ${v.key.padEnd(24)} ${v.id}  ${v.status}${why}`);
    }
    process.stdout.write(lines.join('\n') + '\n');
    if (failed.length) return error(`${failed.length} of ${p.versions.length} version${p.versions.length === 1 ? '' : 's'} failed to compile: ${failed.map((v) => v.key).join(', ')}`);
    return 0;
  } catch (err) {
    // Nothing should throw past the steps' results; if something does, it is still one line.
    return error(`push failed: ${oneLine(err)}`);
  }
}
