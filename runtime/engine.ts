// The engine object: owns a QuickJS WebAssembly module (loaded per engine, never a process-wide
// singleton, so each worker thread has its own) and replaces it when a sandbox had to be
// abandoned. Activations may overlap (they await host calls); each has its own QuickJS runtime.
import { transform } from 'esbuild';
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { activate } from './activate.js';
import { PRELUDE } from './prelude.js';
import { renderTemplate } from './render.js';
import type { Activation, ActivationInput, RenderInput, RenderResult } from './types.js';

export interface EngineOptions {
  /** Loads a fresh module; called at creation and after a sandbox poisoned the current one. */
  loadModule?: () => Promise<QuickJSWASMModule>;
}

export interface Engine {
  activate(input: ActivationInput): Promise<Activation>;
  render(input: RenderInput): Promise<RenderResult>;
  /** Modules loaded so far (1 unless an out-of-memory or stack failure forced a reload). */
  readonly modulesLoaded: number;
  close(): void;
}

export async function createEngine(options: EngineOptions = {}): Promise<Engine> {
  const load = options.loadModule ?? (() => newQuickJSWASMModule());
  let current: Promise<QuickJSWASMModule> | null = load();
  await current;
  // Every activation compiles the prelude in a fresh runtime: minified, that costs about half.
  const prelude = (await transform(PRELUDE, { minify: true, target: 'es2020', logLevel: 'silent' })).code;
  let loaded = 1;
  let closed = false;

  const module = (): Promise<QuickJSWASMModule> => {
    if (closed) throw new Error('the journey engine is closed');
    if (!current) { current = load(); loaded++; }
    return current;
  };
  // A poisoned module is dropped; activations still running on it keep their own reference.
  const drop = (m: Promise<QuickJSWASMModule>) => { if (current === m) current = null; };

  return {
    async activate(input) {
      const m = module();
      const { poisoned, ...result } = await activate(await m, prelude, input);
      if (poisoned) drop(m);
      return result as Activation;
    },
    async render(input) {
      const m = module();
      const { poisoned, ...result } = await renderTemplate(await m, prelude, input);
      if (poisoned) drop(m);
      return result as RenderResult;
    },
    get modulesLoaded() { return loaded; },
    close() { closed = true; current = null; },
  };
}
