// A project directory: headwater.json (purposes) and the journey and template files to build.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { PurposeEntry } from '../../schemas/mod.js';
import { fail, ok, oneLine, type Result } from './result.js';

export type EntryKind = 'journey' | 'template';

export interface ProjectFile {
  /** Path relative to the project, with `/` separators, e.g. `journeys/welcome.ts`. */
  file: string;
  kind: EntryKind;
}

export interface Project {
  dir: string;
  purposes: PurposeEntry[];
  files: ProjectFile[];
}

const FOLDERS: Array<[string, EntryKind]> = [['journeys', 'journey'], ['templates', 'template']];
const SOURCE = /\.(ts|js|mts|mjs)$/;

export function readProject(dir: string): Result<Project> {
  let st;
  try { st = statSync(dir); } catch { return fail(`${dir}: no such directory`); }
  if (!st.isDirectory()) return fail(`${dir}: not a directory`);
  const config = readConfig(join(dir, 'headwater.json'));
  if (!config.ok) return config;
  const files: ProjectFile[] = [];
  for (const [folder, kind] of FOLDERS) {
    let names: string[];
    try { names = readdirSync(join(dir, folder)); } catch { continue; }
    for (const name of names.sort()) {
      if (name.startsWith('.') || name.endsWith('.d.ts') || !SOURCE.test(name)) continue;
      if (statSync(join(dir, folder, name)).isFile()) files.push({ file: `${folder}/${name}`, kind });
    }
  }
  return ok({ dir, purposes: config.value, files });
}

function readConfig(file: string): Result<PurposeEntry[]> {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch { return fail('headwater.json is missing: is this a project directory? (headwater init DIR makes one)'); }
  let json: unknown;
  try { json = JSON.parse(text); } catch (err) { return fail(`headwater.json: ${oneLine(err)}`); }
  if (!json || typeof json !== 'object' || Array.isArray(json)) return fail('headwater.json: must be a JSON object');
  const purposes = (json as { purposes?: unknown }).purposes ?? [];
  if (!Array.isArray(purposes)) return fail('headwater.json: purposes must be an array');
  // Field limits are checked with the rest of the manifest.
  return ok(purposes as PurposeEntry[]);
}
