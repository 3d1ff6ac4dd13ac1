// Module hooks for `headwater test` (registered in the test processes by test-register.ts):
// `headwater/sdk` and `headwater/sdk/testing` resolve to this tool's own SDK (as `headwater push`
// bundles it, so a project needs nothing installed), and TypeScript files load with their types
// stripped by esbuild; relative imports may leave out the extension.
import { readFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transform } from 'esbuild';

const SDK: Record<string, string> = {
  'headwater/sdk': new URL('../../sdk/index.js', import.meta.url).href,
  'headwater/sdk/testing': new URL('../../sdk/testing.js', import.meta.url).href,
};
const TS = /\.(ts|mts|cts)$/;
const isFile = (p: string) => { try { return statSync(p).isFile(); } catch { return false; } };

type Next = (specifier: string, context: unknown) => Promise<{ url: string; format?: string | null }>;

export async function resolve(specifier: string, context: { parentURL?: string }, next: Next) {
  const sdk = SDK[specifier];
  if (sdk) return { url: sdk, format: 'module', shortCircuit: true };
  if ((specifier.startsWith('./') || specifier.startsWith('../')) && context.parentURL?.startsWith('file:')) {
    const base = new URL(specifier, context.parentURL);
    const path = fileURLToPath(base);
    // `./x` or `./x.js` written for a `./x.ts` file (what TypeScript's resolution accepts).
    if (!isFile(path)) {
      for (const candidate of [`${path}.ts`, path.replace(/\.js$/, '.ts'), join(path, 'index.ts')]) {
        if (isFile(candidate)) return { url: pathToFileURL(candidate).href, shortCircuit: true };
      }
    }
  }
  return next(specifier, context);
}

type Load = (url: string, context: unknown) => Promise<{ format?: string | null; source?: unknown }>;

export async function load(url: string, context: unknown, next: Load) {
  if (url.startsWith('file:') && TS.test(new URL(url).pathname)) {
    const file = fileURLToPath(url);
    const out = await transform(await readFile(file, 'utf8'), {
      loader: 'ts', format: 'esm', target: 'es2022', sourcefile: file, sourcemap: 'inline', logLevel: 'silent',
    });
    return { format: 'module', source: out.code, shortCircuit: true };
  }
  return next(url, context);
}
