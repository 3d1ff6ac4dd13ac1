// The journeys of a local project, built exactly as `headwater push` builds them (same bundler,
// same SDK copy), so their digests compare with what the service stores.
import { resolve } from 'node:path';
import { bundleFiles, readDefinition, sha256, SDK_FILE } from '../project/index.js';
import { readProject } from '../project/project.js';
import { fail, ok, type Result } from '../project/result.js';

export interface LocalJourney { file: string; key: string; code: string; digest: string; options: Record<string, unknown> }

export async function buildJourneys(dir: string): Promise<Result<LocalJourney[]>> {
  const root = resolve(dir);
  const project = readProject(root);
  if (!project.ok) return project;
  const bundles = await bundleFiles(root, project.value.files.filter((f) => f.kind === 'journey'), SDK_FILE);
  if (!bundles.ok) return bundles;
  const out: LocalJourney[] = [];
  for (const b of bundles.value) {
    const def = await readDefinition(b);
    if (!def.ok) return def;
    out.push({ file: b.file, key: def.value.key, code: b.code, digest: sha256(Buffer.from(b.code, 'utf8')), options: def.value.options });
  }
  return ok(out);
}

export function findJourney(all: LocalJourney[], key: string): Result<LocalJourney> {
  const j = all.find((x) => x.key === key);
  if (j) return ok(j);
  const keys = all.map((x) => x.key);
  return fail(`the project has no journey "${key}"${keys.length ? ` (its journeys: ${keys.join(', ')})` : ''}`);
}
