// Compiling one bundle: the ESM bundle a project pushed becomes a script the journey runtime can
// evaluate without a module loader (esbuild, format iife: the default export lands on the global
// MODULE_GLOBAL), and that script is loaded once in a fresh QuickJS runtime with a memory cap and a
// deadline to check that it default-exports a definition of the expected kind and key.
import { createHash } from 'node:crypto';
import { parse } from 'acorn';
import { simple } from 'acorn-walk';
import { transform } from 'esbuild';
import { shouldInterruptAfterDeadline, type QuickJSWASMModule } from 'quickjs-emscripten';

/** The global the compiled script assigns its module namespace to (`.default` is the definition). */
export const MODULE_GLOBAL = '__headwater_module';

export interface CompileInput { kind: 'journey' | 'template'; key: string; bundle: Uint8Array }
export interface LoadLimits { memoryBytes: number; deadlineMs: number }
export const DEFAULT_LOAD_LIMITS: LoadLimits = { memoryBytes: 64 * 1024 * 1024, deadlineMs: 2000 };

export type CompileOutput =
  | { ok: true; code: string; moduleDigest: string }
  /** `discardRuntime`: the QuickJS module ran out of memory and must not be reused. */
  | { ok: false; error: string; discardRuntime?: boolean };

const fail = (error: string, discardRuntime = false): CompileOutput => ({ ok: false, error: error.slice(0, 1000), ...(discardRuntime ? { discardRuntime } : {}) });

/** Module specifiers the bundle still imports (a bundle must be self-contained), or a parse error. */
function imports(source: string): string[] | { error: string } {
  let ast;
  try { ast = parse(source, { ecmaVersion: 'latest', sourceType: 'module' }); } catch (e) { return { error: `bundle does not parse: ${(e as Error).message}` }; }
  const out: string[] = [];
  const from = (n: any) => { if (n.source) out.push(String(n.source.value ?? '(dynamic)')); };
  simple(ast, {
    ImportDeclaration: from, ExportAllDeclaration: from, ExportNamedDeclaration: from,
    ImportExpression: (n: any) => out.push(n.source?.type === 'Literal' ? String(n.source.value) : '(dynamic)'),
  });
  return out;
}

// Reads the definition's shape inside the sandbox; only plain strings cross back.
const PROBE = `;(function () {
  var m = globalThis.${MODULE_GLOBAL};
  var d = m && m.default;
  if (d === undefined) return JSON.stringify({ missing: true });
  if (d === null || typeof d !== 'object') return JSON.stringify({ type: d === null ? 'null' : typeof d });
  return JSON.stringify({ kind: typeof d.kind === 'string' ? d.kind : null, key: typeof d.key === 'string' ? d.key : null,
    handler: typeof d.handler, render: typeof d.render });
})()`;

export async function compileBundle(quickjs: QuickJSWASMModule, input: CompileInput, limits: LoadLimits = DEFAULT_LOAD_LIMITS): Promise<CompileOutput> {
  let source: string;
  try { source = new TextDecoder('utf-8', { fatal: true }).decode(input.bundle); } catch { return fail('bundle is not UTF-8 text'); }
  const deps = imports(source);
  if (!Array.isArray(deps)) return fail(deps.error);
  if (deps.length) return fail(`bundle is not self-contained: it imports ${deps.slice(0, 5).map((d) => JSON.stringify(d)).join(', ')}`);

  let code: string;
  try {
    code = (await transform(source, { format: 'iife', globalName: MODULE_GLOBAL, target: 'es2020', platform: 'neutral', logLevel: 'silent' })).code;
  } catch (e) {
    const errs = (e as { errors?: Array<{ text: string }> }).errors;
    return fail(`bundle does not transform: ${errs?.[0]?.text ?? (e as Error).message}`);
  }

  const rt = quickjs.newRuntime();
  rt.setMemoryLimit(limits.memoryBytes);
  rt.setMaxStackSize(1024 * 1024);
  rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + limits.deadlineMs));
  const ctx = rt.newContext();
  let probe: string | undefined;
  let loadError: string | undefined;
  let outOfMemory = false;
  {
    const r = ctx.evalCode(`${code}\n${PROBE}`, 'bundle.js');
    if (r.error) {
      const e = ctx.dump(r.error) as { name?: string; message?: string } | string;
      r.error.dispose();
      const msg = typeof e === 'object' && e ? `${e.name ?? 'Error'}: ${e.message ?? ''}` : String(e);
      outOfMemory = /out of memory/i.test(msg);
      loadError = /interrupted/i.test(msg) ? `bundle did not finish loading within ${limits.deadlineMs} ms`
        : outOfMemory ? `bundle exceeded the ${Math.round(limits.memoryBytes / 1048576)} MiB memory limit while loading`
          : `bundle throws at load: ${msg}`;
    } else {
      probe = ctx.getString(r.value);
      r.value.dispose();
    }
  }
  // After an out-of-memory error QuickJS may abort while disposing: drop the whole module instead.
  if (outOfMemory) return fail(loadError!, true);
  ctx.dispose();
  rt.dispose();
  if (loadError) return fail(loadError);

  const d = JSON.parse(probe!) as { missing?: true; type?: string; kind?: string | null; key?: string | null; handler?: string; render?: string };
  if (d.missing) return fail('bundle has no default export');
  if (d.type) return fail(`the default export is ${d.type}, not a ${input.kind} definition`);
  if (d.kind !== 'journey' && d.kind !== 'template') return fail(`the default export is not a journey or template definition (kind ${JSON.stringify(d.kind)})`);
  if (d.kind !== input.kind) return fail(`the default export is a ${d.kind}, but the manifest lists key ${JSON.stringify(input.key)} as a ${input.kind}`);
  if (d.key !== input.key) return fail(`the default export defines key ${JSON.stringify(d.key)}, but the manifest entry is ${JSON.stringify(input.key)}`);
  const fn = d.kind === 'journey' ? d.handler : d.render;
  if (fn !== 'function') return fail(`the ${d.kind} definition has no ${d.kind === 'journey' ? 'handler' : 'render'} function`);
  return { ok: true, code, moduleDigest: createHash('sha256').update(code).digest('hex') };
}
