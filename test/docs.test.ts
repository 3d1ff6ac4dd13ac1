// The documents hold what they promise: every setting the scaled-mode section of docs/operations.md
// names exists in `headwater serve --help` (or `worker --help`), the README stays a short guide,
// and every relative link of README.md and docs/ points at a file that exists.
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { BIN, ROOT } from './helpers/cli.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'documents and --help');

const run = promisify(execFile);

function section(md: string, heading: string): string {
  const start = md.indexOf(`\n## ${heading}`);
  if (start === -1) throw new Error(`no section "${heading}"`);
  const end = md.indexOf('\n## ', start + 1);
  return md.slice(start, end === -1 ? undefined : end);
}

t.test('every setting of the scaled-mode guide exists in --help', async (t) => {
  const ops = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const text = section(ops, 'Running against PostgreSQL, NATS and ClickHouse servers');
  const names = new Set([...text.matchAll(/\b(PORT|HOST|[A-Z][A-Z0-9]*_[A-Z0-9_]+)\b/g)].map((m) => m[1]!));
  t.ok(names.size >= 12, `the section names its settings (${[...names].join(' ')})`);
  const serve = (await run(process.execPath, [BIN, 'serve', '--help'])).stdout;
  const worker = (await run(process.execPath, [BIN, 'worker', '--help'])).stdout;
  const known = new Set([...`${serve}\n${worker}`.matchAll(/\s([A-Z][A-Z0-9_]+)\s/g)].map((m) => m[1]!));
  for (const n of names) t.ok(known.has(n), `${n} is a setting --help lists`);
});

t.test('the README is a short guide and links resolve', async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  t.ok(readme.split('\n').length <= 250, `README has ${readme.split('\n').length} lines`);
  for (const h of ['## Two commands', '## Quick start', '## Configuration', '## The command line', '## Where to go next']) t.match(readme, h);
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  for (const f of files) {
    const md = readFileSync(join(ROOT, f), 'utf8');
    for (const m of md.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      t.ok(existsSync(join(ROOT, dirname(f), target)), `${f} links to ${target}`);
    }
  }
});

t.test('every CLI command the README lists answers --help', async (t) => {
  for (const cmd of [['serve'], ['worker'], ['org', 'create'], ['login'], ['doctor'], ['init'], ['push'], ['journeys'], ['enable'], ['disable'], ['executions'], ['execution']]) {
    const r = await run(process.execPath, [BIN, ...cmd, '--help']);
    t.match(r.stdout, /usage: headwater|headwater (serve|worker) \[options\]/, `${cmd.join(' ')} --help`);
  }
});
