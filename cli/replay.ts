// `headwater replay [DIR] --journey KEY [--last N]`: replays the journals of the journey's latest
// executions against the locally built code, in the journey runtime the service runs; exit 1 when
// one of them would not replay (a nondeterministic change), so CI can gate on it.
import { parseArgs } from 'node:util';
import { createAuthoringApi } from './authoring/api.js';
import { buildJourneys, findJourney } from './authoring/build.js';
import { brokenLine, checkJourney } from './authoring/check.js';
import { oneLine } from './project/result.js';

export const REPLAY_HELP = `usage: headwater replay [DIR] --journey KEY [--last N] [--url URL] [--token T]

Builds the journey KEY of the project in DIR (default: the current directory) as push would, fetches
the journals of its last N executions (default 100, at most 1000) and replays each against the local
build in the same sandbox the service runs journeys in. Effects are never performed. Prints every
execution the new code would not replay, with the first differing call and its position (counted
from 0); exits 1 if there is one, 0 otherwise.

  --journey KEY  the journey to check (required)
  --last N       how many of its latest executions to replay (default 100)
  --url URL      service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T      a session token or the org pipeline key (default $HEADWATER_TOKEN)`;

const OPTIONS = {
  journey: { type: 'string' }, last: { type: 'string' }, url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const;

const error = (line: string, code = 1) => { process.stderr.write(`headwater: ${line}\n`); return code; };

/** `--last`: an integer from 1 to 1000, or undefined when it is not one. */
export function parseLast(v: string | undefined): number | undefined {
  if (v === undefined) return 100;
  return /^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 1000 ? Number(v) : undefined;
}

/** A progress line rewritten in place on a terminal; nothing otherwise. */
export function progressLine(label: string): ((done: number, total: number) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  return (done, total) => process.stderr.write(`\r${label}: ${done}/${total}${done === total ? '\n' : ''}`);
}

export async function runReplay(argv: string[]): Promise<number> {
  let a;
  try { a = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }); } catch (err) { return error(`replay: ${oneLine(err)}`, 2); }
  if (a.values.help) { process.stdout.write(REPLAY_HELP + '\n'); return 0; }
  if (a.positionals.length > 1) return error('replay takes one project directory', 2);
  const key = a.values.journey;
  if (!key) return error('replay needs --journey KEY (the journey whose executions to replay)', 2);
  const last = parseLast(a.values.last);
  if (last === undefined) return error(`replay: --last must be an integer from 1 to 1000 (got ${JSON.stringify(a.values.last)})`, 2);
  const token = a.values.token || process.env.HEADWATER_TOKEN;
  if (!token) return error('replay needs a credential: pass --token or set HEADWATER_TOKEN (a session token or the pipeline key)', 2);
  const url = a.values.url || process.env.HEADWATER_URL || 'http://127.0.0.1:8080';
  try {
    const built = await buildJourneys(a.positionals[0] ?? '.');
    if (!built.ok) return error(built.error);
    const local = findJourney(built.value, key);
    if (!local.ok) return error(local.error);
    const r = await checkJourney(createAuthoringApi(url, token), local.value, last, progressLine(`replaying ${key}`));
    if (!r.ok) return error(r.error);
    const rep = r.value;
    if (!rep.journals) return error(`the service has no journey "${key}" (push it first)`);
    const lines = rep.broken.map(brokenLine);
    const n = rep.replayed;
    lines.push(`${key} (${rep.file}): ${n} execution${n === 1 ? '' : 's'} replayed, ${n - rep.broken.length} compatible, ${rep.broken.length} would not replay`);
    process.stdout.write(lines.join('\n') + '\n');
    return rep.broken.length ? 1 : 0;
  } catch (err) {
    return error(`replay failed: ${oneLine(err)}`);
  }
}
