// `headwater types [DIR] [--out FILE]`: writes TypeScript declarations of the org's tracking plan.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createAuthoringApi } from './authoring/api.js';
import { generateTypes } from './authoring/typegen.js';
import { oneLine } from './project/result.js';

export const TYPES_HELP = `usage: headwater types [DIR] [--out FILE] [--url URL] [--token T]

Writes TypeScript of the org's tracking plan to FILE (default DIR/headwater-types.ts, DIR the current
directory): \`Events\` (each allowed event and its property types), \`EventName\`, \`Properties<E>\`,
\`Traits\`, and typed helpers: \`typedSegment(analytics)\` around an @segment/analytics-node client,
and \`track\` / \`identify\` for headwater's /v1/track and /v1/identify. A misspelt event name or a
property of the wrong type then fails to compile. The output is sorted and has no timestamp: the
same plan always gives the same file.

  --out FILE     where to write (default DIR/headwater-types.ts)
  --url URL      service URL (default $HEADWATER_URL or http://127.0.0.1:8080)
  --token T      a session token (default $HEADWATER_TOKEN)`;

const OPTIONS = { out: { type: 'string' }, url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;
const error = (line: string, code = 1) => { process.stderr.write(`headwater: ${line}\n`); return code; };

export async function runTypes(argv: string[]): Promise<number> {
  let a;
  try { a = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }); } catch (err) { return error(`types: ${oneLine(err)}`, 2); }
  if (a.values.help) { process.stdout.write(TYPES_HELP + '\n'); return 0; }
  if (a.positionals.length > 1) return error('types takes one project directory', 2);
  const token = a.values.token || process.env.HEADWATER_TOKEN;
  if (!token) return error('types needs a credential: pass --token or set HEADWATER_TOKEN (a session token)', 2);
  const url = a.values.url || process.env.HEADWATER_URL || 'http://127.0.0.1:8080';
  const out = resolve(a.values.out ?? join(a.positionals[0] ?? '.', 'headwater-types.ts'));
  try {
    const api = createAuthoringApi(url, token);
    const [events, traits] = await Promise.all([api.events(), api.traits()]);
    if (!events.ok) return error(events.error);
    if (!traits.ok) return error(traits.error);
    const text = generateTypes(events.value, traits.value);
    try { writeFileSync(out, text); } catch (err) { return error(`cannot write ${out}: ${oneLine(err)}`); }
    const n = (s: Array<{ state: string }>) => s.filter((x) => x.state === 'allowed').length;
    process.stdout.write(`wrote ${out}: ${n(events.value)} events, ${n(traits.value)} traits\n`);
    return 0;
  } catch (err) {
    return error(`types failed: ${oneLine(err)}`);
  }
}
