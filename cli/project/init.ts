// `headwater init DIR`: scaffold a project in a new or empty directory.
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SCAFFOLD } from './scaffold.js';
import { fail, ok, oneLine, type Result } from './result.js';

export function initProject(dir: string): Result<string[]> {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) return fail(`${dir} exists and is not a directory`);
    if (readdirSync(dir).length > 0) return fail(`${dir} is not empty; init writes only into a new or empty directory`);
  }
  const written: string[] = [];
  try {
    for (const [rel, text] of Object.entries(SCAFFOLD)) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), text, { flag: 'wx' });
      written.push(rel);
    }
  } catch (err) {
    return fail(`cannot write the project: ${oneLine(err)}`);
  }
  return ok(written);
}
