// Embedded test servers start from a copy of one migrated data directory instead of running
// PGlite's initdb and every migration again: a fresh start costs 4.7-6.4 s on this machine kind,
// a copy (0.6 s) and a start on it (1.0 s) cost 1.6 s. The copy is made once per checkout and
// migration set, under node_modules/.cache, by whichever test process needs it first. Only the
// stores are copied: each server still generates its own secret key.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const STORES = new Set(['pg', 'ch']);

/** What a seed depends on: the migrations and the versions of the two embedded engines. */
function seedKey(): string {
  const h = createHash('sha256');
  const dir = join(ROOT, 'dist/pipeline/store/migrations');
  for (const f of readdirSync(dir).sort()) if (f.endsWith('.js')) h.update(f).update(readFileSync(join(dir, f)));
  for (const p of ['@electric-sql/pglite', 'chdb']) h.update(readFileSync(join(ROOT, 'node_modules', p, 'package.json')));
  return h.digest('hex').slice(0, 16);
}

/**
 * Fills the empty directory `dataDir` with migrated embedded stores. `make` starts and stops a
 * server on the directory it is given (the caller's harness, so no import cycle).
 */
export async function seedDataDir(dataDir: string, make: (dir: string) => Promise<void>): Promise<void> {
  const cache = join(ROOT, 'node_modules/.cache/headwater-test');
  const seed = join(cache, seedKey());
  if (!existsSync(seed)) {
    mkdirSync(cache, { recursive: true });
    const building = mkdtempSync(join(cache, `building-${randomBytes(3).toString('hex')}-`));
    await make(building);
    // Another test process may have finished first: theirs is as good as ours.
    try { renameSync(building, seed); } catch { rmSync(building, { recursive: true, force: true }); }
  }
  mkdirSync(dataDir, { recursive: true });
  for (const name of readdirSync(seed)) if (STORES.has(name)) cpSync(join(seed, name), join(dataDir, name), { recursive: true });
}
