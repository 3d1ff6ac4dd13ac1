// The dependency arrows of the README run one way: every relative import (static, dynamic, or a
// module URL built with import.meta.url) of a source folder may only reach the folders listed for it.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// folder -> the folders it may import besides itself
const ALLOWED: Record<string, string[]> = {
  lib: [],
  // The journey SDK is bundled into user code that runs in a sandbox: it may import nothing.
  sdk: [],
  schemas: ['lib'],
  // The HTTP layer (front ends, binder, errors) sits below both route folders, api/ and ingest/.
  http: ['schemas', 'lib'],
  // Ingestion and the stores; it tells the journey side of landed events through a hook it is given.
  pipeline: ['schemas', 'lib'],
  // Journeys, executions, the sandbox runtime and the outbox senders (e-mail, webhooks).
  journeys: ['pipeline', 'schemas', 'lib'],
  workers: ['journeys', 'pipeline', 'schemas', 'lib'],
  ingest: ['http', 'pipeline', 'schemas', 'lib'],
  api: ['ingest', 'journeys', 'workers', 'http', 'pipeline', 'schemas', 'lib'],
  cli: ['api', 'ingest', 'journeys', 'workers', 'http', 'pipeline', 'schemas', 'lib', 'sdk'],
  // The dashboard is browser code: it reaches the service over HTTP only (its API types are
  // generated into ui/generated from the OpenAPI document, not imported from schemas/).
  ui: [],
};

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if ((name.endsWith('.ts') || name.endsWith('.tsx')) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const SPEC = /(?:from\s+|import\s*\(\s*|new URL\(\s*)'(\.{1,2}\/[^']+)'/g;

export function imports(text: string): string[] {
  return [...text.matchAll(SPEC)].map((m) => m[1]);
}

t.test('the import scanner sees static, dynamic and URL references', async (t) => {
  t.same(imports(`import { a } from '../x/a.js';\nconst b = await import('./b.js');\nnew URL('../w/t.js', import.meta.url)`),
    ['../x/a.js', './b.js', '../w/t.js']);
});

for (const [folder, allowed] of Object.entries(ALLOWED)) {
  t.test(`${folder}/ imports only ${allowed.join(', ') || 'itself'}`, async (t) => {
    const bad: string[] = [];
    for (const file of sources(join(root, folder))) {
      for (const spec of imports(readFileSync(file, 'utf8'))) {
        const target = relative(root, resolve(dirname(file), spec)).split(sep)[0];
        if (target !== folder && !allowed.includes(target)) bad.push(`${relative(root, file)} -> ${spec}`);
      }
    }
    t.same(bad, [], 'no import against the arrows');
  });
}

// The sandbox runs in any worker thread and has no I/O of its own: within journeys/ it imports only
// itself, besides schemas/ and lib/.
t.test('journeys/runtime/ imports only schemas, lib', async (t) => {
  const folder = join('journeys', 'runtime');
  const bad: string[] = [];
  for (const file of sources(join(root, folder))) {
    for (const spec of imports(readFileSync(file, 'utf8'))) {
      const target = relative(root, resolve(dirname(file), spec));
      if (!target.startsWith(folder + sep) && !['schemas', 'lib'].includes(target.split(sep)[0]!)) bad.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  t.same(bad, [], 'no import against the arrows');
});
