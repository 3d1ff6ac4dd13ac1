// TypeScript to plain JavaScript (types stripped, nothing else changed) so that acorn can read it.
import { transform } from 'esbuild';

export async function stripTypes(source: string, file: string): Promise<string> {
  const loader = /\.m?ts$/.test(file) ? 'ts' : 'js';
  return (await transform(source, { loader, format: 'esm', target: 'esnext', sourcefile: file, logLevel: 'silent' })).code;
}
