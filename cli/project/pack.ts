// Packs a project's source into a deterministic, portable gzip tarball: entries sorted, regular
// files only, mtime fixed at the epoch, no uid/gid/owner names, mode 0644. The same files give the
// same bytes (and digest) whatever their timestamps, owner or checkout. Skipped: node_modules and
// every dot entry (.git, .env, editor folders), and symbolic links.
import { create } from 'tar';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';

export interface Packed { bytes: Buffer; digest: string; files: string[] }

export function sourceFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix))) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const rel = prefix ? `${prefix}/${name}` : name;
    const st = lstatSync(join(dir, rel));
    if (st.isDirectory()) out.push(...sourceFiles(dir, rel));
    else if (st.isFile()) out.push(rel);
  }
  // Code-unit order, independent of the file system's listing order and of the locale.
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

export async function packSource(dir: string): Promise<Packed> {
  const files = sourceFiles(dir);
  const stream = create({
    cwd: dir,
    gzip: { level: 9 },
    portable: true,
    mtime: new Date(0),
    noDirRecurse: true,
    // Sequential reads keep the entry order exactly the order given.
    jobs: 1,
    onWriteEntry(entry) { if (entry.stat) entry.stat.mode = 0o100644; },
  }, files);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  return { bytes, digest: sha256(bytes), files };
}
