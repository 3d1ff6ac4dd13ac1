// `headwater test [DIR]`: runs the project's test files with node:test (no other framework), with
// `headwater/sdk` and `headwater/sdk/testing` resolved to this tool's SDK and TypeScript loaded as is.
import { spawn } from 'node:child_process';
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { oneLine } from './project/result.js';

export const TEST_HELP = `usage: headwater test [DIR]

Runs every *.test.ts, *.test.mts, *.test.js and *.test.mjs file under DIR (default: the current
directory; node_modules and dot folders skipped) with node:test. Test files import runJourney from
'headwater/sdk/testing' to run a journey with an in-memory ctx and a virtual clock. Exits with the
test run's status (0 when every test passed).`;

const TEST_FILE = /\.test\.(ts|mts|js|mjs)$/;
const REGISTER = fileURLToPath(new URL('./authoring/test-register.js', import.meta.url));

/** The project's test files, relative to `dir`, in code-unit order. */
export function testFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix))) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const rel = prefix ? `${prefix}/${name}` : name;
    const st = lstatSync(join(dir, rel));
    if (st.isDirectory()) out.push(...testFiles(dir, rel));
    else if (st.isFile() && TEST_FILE.test(name)) out.push(rel);
  }
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

const error = (line: string, code = 1) => { process.stderr.write(`headwater: ${line}\n`); return code; };

export async function runTest(argv: string[]): Promise<number> {
  let a;
  try { a = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true }); } catch (err) { return error(`test: ${oneLine(err)}`, 2); }
  if (a.values.help) { process.stdout.write(TEST_HELP + '\n'); return 0; }
  if (a.positionals.length > 1) return error('test takes one project directory', 2);
  const dir = resolve(a.positionals[0] ?? '.');
  try { if (!statSync(dir).isDirectory()) return error(`${dir}: not a directory`); } catch { return error(`${dir}: no such directory`); }
  const files = testFiles(dir);
  if (files.length === 0) return error(`no test files (*.test.ts|js) under ${dir}`);
  const child = spawn(process.execPath, ['--import', REGISTER, '--test', ...files], { cwd: dir, stdio: 'inherit' });
  return new Promise<number>((done) => {
    child.on('error', (err) => done(error(`cannot start node --test: ${oneLine(err)}`)));
    child.on('close', (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}
