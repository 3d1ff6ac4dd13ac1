// `headwater push --check` / `--force`: before pushing, the replay check runs for every enabled
// journey whose code changed (its local bundle differs from the service's newest ready one). A
// journey whose running executions' journals would not replay refuses the push; `--force` pushes
// anyway and says how many running executions keep the version they started on (the service never
// moves a running execution to a newer version).
import { parseArgs } from 'node:util';
import { createAuthoringApi } from './authoring/api.js';
import { buildJourneys } from './authoring/build.js';
import { brokenLine, checkJourney, type CheckReport } from './authoring/check.js';
import { progressLine } from './replay.js';
import { runPush } from './project/index.js';
import { oneLine } from './project/result.js';

const OPTIONS = {
  app: { type: 'string' }, url: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean' },
  check: { type: 'boolean' }, force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
} as const;

/** Journals replayed per changed journey. */
const CHECK_LAST = 100;

const say = (line: string) => process.stderr.write(`${line}\n`);
const error = (line: string, code = 1) => { say(`headwater: ${line}`); return code; };
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export async function runCheckedPush(argv: string[]): Promise<number> {
  const rest = argv.filter((x) => x !== '--check' && x !== '--force');
  const force = argv.includes('--force');
  // Other push options are push's own: read leniently here, validated by push itself.
  const a = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: false });
  if (a.values.help) return runPush(rest);
  const token = (a.values.token as string | undefined) || process.env.HEADWATER_TOKEN;
  if (!token) return runPush(rest);
  const url = (a.values.url as string | undefined) || process.env.HEADWATER_URL || 'http://127.0.0.1:8080';
  const dir = a.positionals[0] ?? '.';
  try {
    const built = await buildJourneys(dir);
    if (!built.ok) return error(built.error);
    const api = createAuthoringApi(url, token);
    const reports: CheckReport[] = [];
    for (const local of built.value) {
      const j = await api.journals(local.key, 1);
      if (!j.ok) return error(`push --check: ${j.error}`);
      // New, disabled or unchanged journeys have no running code to break.
      if (!j.value || !j.value.enabled || j.value.bundle === local.digest) continue;
      const r = await checkJourney(api, local, CHECK_LAST, progressLine(`checking ${local.key}`));
      if (!r.ok) return error(`push --check: ${r.error}`);
      reports.push(r.value);
      say(`check ${local.key}: ${plural(r.value.replayed, 'execution')} replayed, ${r.value.broken.length} would not replay`);
    }
    const bad = reports.filter((r) => r.broken.length > 0);
    if (bad.length > 0) {
      for (const r of bad) for (const b of r.broken) say(`  ${r.key}: ${brokenLine(b)}`);
      const active = bad.reduce((n, r) => n + (r.journals?.active ?? 0), 0);
      const which = bad.map((r) => `${r.key} (${plural(r.broken.length, 'execution')})`).join(', ');
      if (!force) return error(`push refused: the changed code of ${which} would not replay recorded journals; fix it, or push anyway with --force`);
      say(`push --force: pushing anyway; ${plural(active, 'running execution')} of ${bad.map((r) => r.key).join(', ')} ${active === 1 ? 'keeps' : 'keep'} the old version`);
    }
  } catch (err) {
    return error(`push --check failed: ${oneLine(err)}`);
  }
  return runPush(rest);
}
