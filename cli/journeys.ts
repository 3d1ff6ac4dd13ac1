// `headwater journeys | enable KEY | disable KEY | executions | execution ID`: the journey routes
// read and written with an org session token, printed for a terminal (or as JSON with --json).
import { parseArgs } from 'node:util';
import { callApi, CliError, orgTarget } from './request.js';

const COMMON = `  --url URL      service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T      an org session token (default $HEADWATER_TOKEN)
  --json         print the API's answer as JSON`;

export const JOURNEY_HELP: Record<string, string> = {
  journeys: `usage: headwater journeys [--url URL] [--token T] [--json]

Lists the org's journeys: on or off, trigger, and the latest version's status (compiling, ready,
or failed with its compile error).

${COMMON}`,
  enable: `usage: headwater enable KEY [--url URL] [--token T] [--json]

Turns journey KEY on (PATCH /v1/journeys/KEY {"data":{"enabled":true}}): new triggers start
executions of its newest ready version. Needs an org:admin session.

${COMMON}`,
  disable: `usage: headwater disable KEY [--url URL] [--token T] [--json]

Turns journey KEY off: no new executions start; running ones continue.

${COMMON}`,
  executions: `usage: headwater executions [--journey KEY] [--status S] [--limit N] [--url URL] [--token T] [--json]

Lists executions, newest first. --status is running, waiting, completed, failed or cancelled.

${COMMON}`,
  execution: `usage: headwater execution ID [--url URL] [--token T] [--json]

Prints an execution: status, step, and its journal (each entry's position, call and result) and logs.

${COMMON}`,
};

const OPTIONS = {
  url: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  journey: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' }, verbose: { type: 'boolean' },
} as const;

const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : s + '\n');
const short = (v: unknown, n = 60) => { const s = typeof v === 'string' ? v : JSON.stringify(v); return s.length > n ? s.slice(0, n - 1) + '…' : s; };

export function triggerInWords(t: any): string {
  if (!t || typeof t !== 'object') return 'no trigger';
  if (typeof t.event === 'string') return `on event ${t.event}`;
  if (typeof t.segment === 'string') return `on ${t.on === 'exited' ? 'exiting' : 'entering'} segment ${t.segment}`;
  return short(t);
}

/** Runs one of the journey commands; answers the exit code. */
export async function runJourneyCommand(cmd: string, argv: string[]): Promise<number> {
  let a;
  try {
    a = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new CliError(`${cmd}: ${(err as Error).message.split('\n')[0]}`, 2);
  }
  if (a.values.help) { out(JOURNEY_HELP[cmd]!); return 0; }
  const argv2 = [...(a.values.url ? ['--url', a.values.url] : []), ...(a.values.token ? ['--token', a.values.token] : [])];
  const json = a.values.json === true;
  const needsOne = cmd === 'enable' || cmd === 'disable' || cmd === 'execution';
  if (needsOne && a.positionals.length !== 1) throw new CliError(`${cmd} needs exactly one ${cmd === 'execution' ? 'execution id' : 'journey key'}: headwater ${cmd} ${cmd === 'execution' ? 'ID' : 'KEY'}`, 2);
  if (!needsOne && a.positionals.length > 0) throw new CliError(`${cmd} takes no positional argument (got ${a.positionals[0]})`, 2);
  const t = orgTarget(argv2);

  if (cmd === 'journeys') {
    const r = await callApi(t, 'GET', '/v1/journeys?limit=100');
    if (json) { out(JSON.stringify(r, null, 2)); return 0; }
    if (r.data.length === 0) { out('no journeys yet: headwater push a project first'); return 0; }
    for (const j of r.data) {
      const lv = j.latestVersion;
      const latest = lv ? `${lv.status}${lv.status === 'failed' && lv.error ? ': ' + short(lv.error, 120) : ''}` : 'no version';
      out(`${j.key.padEnd(24)} ${(j.enabled ? 'on' : 'off').padEnd(4)} ${triggerInWords(j.trigger).padEnd(32)} latest version ${latest}`);
    }
    return 0;
  }
  if (cmd === 'enable' || cmd === 'disable') {
    const key = a.positionals[0]!;
    const r = await callApi(t, 'PATCH', `/v1/journeys/${encodeURIComponent(key)}`, { enabled: cmd === 'enable' });
    if (json) { out(JSON.stringify(r, null, 2)); return 0; }
    out(`journey ${key} is ${r.data.enabled ? 'on' : 'off'} (version ${r.data.versionId ?? 'none'}, ${triggerInWords(r.data.trigger)})`);
    return 0;
  }
  if (cmd === 'executions') {
    const q = new URLSearchParams();
    if (a.values.journey) q.set('journey', a.values.journey);
    if (a.values.status) q.set('status', a.values.status);
    q.set('limit', a.values.limit ?? '50');
    const r = await callApi(t, 'GET', `/v1/executions?${q}`);
    if (json) { out(JSON.stringify(r, null, 2)); return 0; }
    if (r.data.length === 0) { out('no executions'); return 0; }
    for (const e of r.data) {
      out(`${e.id}  ${e.journeyKey.padEnd(20)} ${e.status.padEnd(10)} ${(e.step ?? '-').padEnd(16)} profile ${e.profileId}  started ${e.startedAt}`);
    }
    return 0;
  }
  // execution ID
  const id = a.positionals[0]!;
  const r = await callApi(t, 'GET', `/v1/executions/${encodeURIComponent(id)}`);
  if (json) { out(JSON.stringify(r, null, 2)); return 0; }
  const e = r.data;
  const lines = [
    `execution ${e.id} of journey ${e.journeyKey} for profile ${e.profileId}`,
    `status    ${e.status}${e.step ? ` at ${e.step}` : ''}${e.timerDeadline ? ` (until ${e.timerDeadline})` : ''}${e.error ? `: ${e.error}` : ''}`,
    `started   ${e.startedAt}${e.endedAt ? `, ended ${e.endedAt}` : ''}`,
    `journal   ${e.journal.length} entr${e.journal.length === 1 ? 'y' : 'ies'}`,
  ];
  for (const j of e.journal) {
    const result = j.result.ok ? `ok ${short(j.result.value ?? null, 50)}` : `error ${j.result.error.code}: ${short(j.result.error.message, 80)}`;
    lines.push(`  #${String(j.at).padEnd(3)} ${j.call.name.padEnd(14)} ${short(j.call.args, 50).padEnd(50)} ${result}`);
  }
  if (e.logs.length) {
    lines.push(`logs      ${e.logs.length}`);
    for (const l of e.logs) lines.push(`  ${l.createdAt} ${l.level.padEnd(5)} ${l.message}`);
  }
  out(lines.join('\n'));
  return 0;
}
