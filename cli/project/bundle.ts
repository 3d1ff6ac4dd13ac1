// Builds each journey and template file into one self-contained ESM bundle with esbuild (in process).
// `headwater/sdk` resolves to this tool's own copy of the SDK, so a project needs nothing installed;
// the project's own node_modules, when present, serves its other imports. The output is
// deterministic: the same sources give the same bytes, wherever the tool is installed.
import { build, type Message, type Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ProjectFile } from './project.js';
import { fail, ok, oneLine, type Result } from './result.js';

export interface Bundle extends ProjectFile {
  code: string;
}

/** Resolves `headwater/sdk` to `sdkFile` (the built SDK, dist/sdk/index.js). */
export function sdkPlugin(sdkFile: string): Plugin {
  return {
    name: 'headwater-sdk',
    setup(b) {
      // A namespace of its own keeps the SDK's install path out of the bundle's comments.
      b.onResolve({ filter: /^headwater\/sdk$/ }, () => ({ path: 'headwater/sdk', namespace: 'headwater-sdk' }));
      b.onLoad({ filter: /.*/, namespace: 'headwater-sdk' }, () => ({ contents: readFileSync(sdkFile, 'utf8'), loader: 'js' }));
    },
  };
}

function describe(m: Message): string {
  const where = m.location ? `${m.location.file}:${m.location.line}:${m.location.column + 1}: ` : '';
  return `${where}${m.text}`;
}

export async function bundleFiles(dir: string, files: ProjectFile[], sdkFile: string): Promise<Result<Bundle[]>> {
  if (files.length === 0) return ok([]);
  const root = resolve(dir);
  const outdir = join(root, '.headwater-build');
  try {
    const r = await build({
      entryPoints: files.map((f) => join(root, f.file)),
      absWorkingDir: root,
      outbase: root,
      outdir,
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      target: 'es2020',
      // Neutral resolves no package fields by default; projects' dependencies mostly ship these.
      mainFields: ['module', 'main'],
      charset: 'utf8',
      legalComments: 'none',
      sourcemap: false,
      logLevel: 'silent',
      plugins: [sdkPlugin(sdkFile)],
    });
    const byPath = new Map(r.outputFiles.map((o) => [o.path, o.text]));
    const out: Bundle[] = [];
    for (const f of files) {
      const code = byPath.get(join(outdir, f.file.replace(/\.[^./]+$/, '.js')));
      if (code === undefined) return fail(`${f.file}: esbuild produced no output for it`);
      out.push({ ...f, code });
    }
    return ok(out);
  } catch (err) {
    const errors = (err as { errors?: Message[] }).errors;
    if (errors?.length) {
      const more = errors.length > 1 ? ` (and ${errors.length - 1} more error${errors.length > 2 ? 's' : ''})` : '';
      return fail(`build failed: ${describe(errors[0]!).replace(/\s*\n\s*/g, ' ')}${more}`);
    }
    return fail(`build failed: ${oneLine(err)}`);
  }
}
