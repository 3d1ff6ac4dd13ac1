// Reads what a bundle default-exports (kind, key, options) by evaluating it in a throwaway node:vm
// context: no require, no process, no network. Only the definition's metadata is read; handlers and
// renderers never run here.
import { transform } from 'esbuild';
import { runInNewContext } from 'node:vm';
import type { Bundle } from './bundle.js';
import { fail, ok, oneLine, type Result } from './result.js';

export interface Definition {
  kind: 'journey' | 'template';
  key: string;
  /** The options as JSON (what the manifest entry is made of). */
  options: Record<string, unknown>;
}

const EVAL_TIMEOUT_MS = 2000;

export async function readDefinition(b: Bundle): Promise<Result<Definition>> {
  let cjs: string;
  try {
    cjs = (await transform(b.code, { format: 'cjs', target: 'es2020', logLevel: 'silent' })).code;
  } catch (err) {
    return fail(`${b.file}: cannot read its default export: ${oneLine(err)}`);
  }
  let def: unknown;
  try {
    const wrapped = `(function () { var module = { exports: {} }; var exports = module.exports;\n${cjs}\nreturn module.exports.default; })()`;
    def = runInNewContext(wrapped, {}, { timeout: EVAL_TIMEOUT_MS, filename: b.file });
  } catch (err) {
    return fail(`${b.file}: evaluating it failed: ${oneLine(err)}`);
  }
  const want = b.kind;
  const d = def as { kind?: unknown; key?: unknown; options?: unknown } | undefined;
  if (!d || typeof d !== 'object' || d.kind !== want) {
    return fail(`${b.file}: must default-export ${want}(...) from 'headwater/sdk'`);
  }
  if (typeof d.key !== 'string' || !d.options || typeof d.options !== 'object') return fail(`${b.file}: the ${want} has no key`);
  let options: Record<string, unknown>;
  try {
    options = JSON.parse(JSON.stringify(d.options)) as Record<string, unknown>;
  } catch (err) {
    return fail(`${b.file}: the ${want} options must be plain JSON: ${oneLine(err)}`);
  }
  return ok({ kind: want, key: d.key, options });
}
