// Piscina task: compiles one version's bundle (journeys/definitions/load.ts) off the event loop. Each
// thread keeps one QuickJS WebAssembly module; every load gets a fresh runtime inside it, and a
// module that ran out of memory is replaced, never reused.
import type { MessagePort } from 'node:worker_threads';
import { transform } from 'esbuild';
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { compileBundle, type CompileInput, type CompileOutput, type LoadLimits } from '../journeys/definitions/mod.js';

let quickjs: QuickJSWASMModule | null = null;

export default async function run(task: CompileInput & { limits?: LoadLimits; started?: MessagePort }): Promise<CompileOutput> {
  if (!quickjs) {
    quickjs = await newQuickJSWASMModule();
    await transform('', {}); // starts this thread's esbuild service
  }
  // The caller's deadline starts now, after this thread's start-up.
  task.started?.postMessage(1);
  task.started?.close();
  try {
    const out = await compileBundle(quickjs, task, task.limits);
    if (!out.ok && out.discardRuntime) quickjs = null;
    return out;
  } catch (e) {
    quickjs = null;
    return { ok: false, error: `compile failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}
