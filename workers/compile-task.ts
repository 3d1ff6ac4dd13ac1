// Piscina task: compiles one version's bundle (pipeline/journeys/load.ts) off the event loop. Each
// thread keeps one QuickJS WebAssembly module; every load gets a fresh runtime inside it, and a
// module that ran out of memory is replaced, never reused.
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { compileBundle, type CompileInput, type CompileOutput, type LoadLimits } from '../pipeline/journeys/mod.js';

let quickjs: QuickJSWASMModule | null = null;

export default async function run(task: CompileInput & { limits?: LoadLimits }): Promise<CompileOutput> {
  quickjs ??= await newQuickJSWASMModule();
  try {
    const out = await compileBundle(quickjs, task, task.limits);
    if (!out.ok && out.discardRuntime) quickjs = null;
    return out;
  } catch (e) {
    quickjs = null;
    return { ok: false, error: `compile failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}
