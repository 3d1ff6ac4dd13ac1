// Whether the dashboard build (dist/ui) is up to date: `check` exits 0 when dist/ui was built from
// exactly the current inputs (the files under ui/ but ui/generated, the OpenAPI document the API
// client is generated from, and package-lock.json for the build tools' versions), 1 otherwise;
// `write` records them after a build. `npm run build:ui` checks first, so an `npm test` that changed
// nothing of the dashboard skips its ~13 s build (and never empties dist/ui under a running test).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ui = join(root, 'ui');
const stamp = join(root, 'dist', 'ui', '.inputs');

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return p === join(ui, 'generated') ? [] : files(p);
    return [p];
  });
}

function inputs() {
  const h = createHash('sha256');
  const list = [...files(ui), join(root, 'dist', 'schemas', 'generated', 'openapi.json'), join(root, 'package-lock.json')];
  for (const f of list.sort()) h.update(relative(root, f)).update('\0').update(existsSync(f) ? readFileSync(f) : '').update('\0');
  return h.digest('hex');
}

const mode = process.argv[2];
if (mode === 'write') writeFileSync(stamp, inputs() + '\n');
else if (mode === 'check') process.exit(existsSync(join(root, 'dist', 'ui', 'index.html')) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === inputs() ? 0 : 1);
else { process.stderr.write('usage: node ui/stamp.mjs check|write\n'); process.exit(2); }
