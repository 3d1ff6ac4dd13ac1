// The dashboard's static files (`npm run build` writes them to dist/ui): served under /ui/ by the
// HTTP core itself, so both front ends (uWS, node:http) answer them the same way. Every file is
// read once at start into memory (the build is a few hundred KB) with its gzip form; a request
// path is only ever a key of that map, never joined onto the file system, so no path can escape
// the directory. Paths that name no file get index.html (the app routes deep links itself),
// except under assets/, where a missing hashed file is a real 404.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';

export const SITE_PREFIX = '/ui';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
  '.ico': 'image/x-icon',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.map', '.txt']);
/** Vite names the files under assets/ by their content hash: they never change under one name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Everything else (index.html) is revalidated, so a new build is picked up at once. */
const REVALIDATE = 'no-cache';
/** The page may load and call only its own origin: no CDN, no third party, no framing. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

interface SiteFile { body: Buffer; gz?: Buffer; type: string; cache: string }

export interface SiteAnswer { status: number; headers: Record<string, string>; contentType: string; body: Buffer }

export interface StaticSite {
  /** Whether the build was found (false: /ui answers 404 saying so). */
  readonly present: boolean;
  /** The answer to GET/HEAD of `path` (starting with SITE_PREFIX). */
  answer(path: string, acceptEncoding: string): SiteAnswer;
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    // Dot files are the build's own records (dist/ui/.inputs, ui/stamp.mjs), not the site's.
    if (name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

export function loadStaticSite(dir: string): StaticSite {
  const files = new Map<string, SiteFile>();
  if (existsSync(join(dir, 'index.html'))) {
    for (const p of walk(dir)) {
      const rel = relative(dir, p).split(sep).join('/');
      const ext = extname(p);
      const body = readFileSync(p);
      const f: SiteFile = { body, type: TYPES[ext] ?? 'application/octet-stream', cache: rel.startsWith('assets/') ? IMMUTABLE : REVALIDATE };
      if (COMPRESSIBLE.has(ext) && body.length > 512) f.gz = gzipSync(body, { level: 9 });
      files.set(rel, f);
    }
  }
  const index = files.get('index.html');
  const plain = (status: number, text: string): SiteAnswer => ({
    status, headers: { 'cache-control': 'no-cache' }, contentType: 'text/plain; charset=utf-8', body: Buffer.from(text),
  });
  return {
    present: index !== undefined,
    answer(path, acceptEncoding) {
      if (!index) return plain(404, 'the dashboard is not built (npm run build writes dist/ui)\n');
      // '/ui', '/ui/' and '/ui/x/y' -> '', '', 'x/y'
      const rel = path.slice(SITE_PREFIX.length).replace(/^\/+/, '');
      let f = files.get(rel);
      if (!f) {
        if (rel.startsWith('assets/')) return plain(404, 'no such file\n');
        f = index;
      }
      const headers: Record<string, string> = {
        'cache-control': f.cache, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer',
      };
      if (f.type.startsWith('text/html')) headers['content-security-policy'] = CSP;
      if (f.gz) {
        headers.vary = 'accept-encoding';
        if (/\bgzip\b/i.test(acceptEncoding)) {
          headers['content-encoding'] = 'gzip';
          return { status: 200, headers, contentType: f.type, body: f.gz };
        }
      }
      return { status: 200, headers, contentType: f.type, body: f.body };
    },
  };
}
