import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Embedded stores (PGlite files, chDB) must not be opened by two processes: a pid lock refuses the
// second one with a clear message instead of corrupting the files.
export function lockDir(dir: string, what: string): () => void {
  const lock = join(dir, 'owner.pid');
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (pid && pid !== process.pid && alive(pid)) {
      // exitCode 3: `headwater serve` exits with the start-up failure code and prints only this line.
      throw Object.assign(new Error(`embedded ${what} in ${dir} is in use by process ${pid}; point several processes at shared servers (DATABASE_URL, CLICKHOUSE_URL) instead`), { exitCode: 3 });
    }
  }
  writeFileSync(lock, String(process.pid), { mode: 0o600 });
  return () => rmSync(lock, { force: true });
}

function alive(pid: number) { try { process.kill(pid, 0); return true; } catch { return false; } }
