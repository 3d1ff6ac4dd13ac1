// The engine object: owns a QuickJS WebAssembly module (loaded per engine, never a process-wide
// singleton, so each worker thread has its own), the sandboxes it keeps between activations
// (runtime/cache.ts), and replaces the module, forgetting those sandboxes, when one had to be
// abandoned. Activations may overlap (they await host calls); each owns its sandbox while it runs.
import { transform } from 'esbuild';
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { activate } from './activate.js';
import { DEFAULT_CACHE, SandboxCache, type CacheLimits, type CacheStats } from './cache.js';
import { PRELUDE } from './prelude.js';
import { renderTemplate } from './render.js';
import type { Activation, ActivationInput, RenderInput, RenderResult } from './types.js';

export interface EngineOptions {
  /** Loads a fresh module; called at creation and after a sandbox poisoned the current one. */
  loadModule?: () => Promise<QuickJSWASMModule>;
  /** Bounds of the sandboxes kept between activations (DEFAULT_CACHE); `parkedMax: 0` makes every resume replay. */
  cache?: Partial<CacheLimits>;
}

export interface Engine {
  activate(input: ActivationInput): Promise<Activation>;
  render(input: RenderInput): Promise<RenderResult>;
  /** Modules loaded so far (1 unless an out-of-memory or stack failure forced a reload). */
  readonly modulesLoaded: number;
  /** Sandboxes kept and how often they served (counters since creation). */
  readonly cacheStats: Readonly<CacheStats>;
  close(): void;
}

export async function createEngine(options: EngineOptions = {}): Promise<Engine> {
  const load = options.loadModule ?? (() => newQuickJSWASMModule());
  let current: Promise<QuickJSWASMModule> | null = load();
  await current;
  // Evaluated once per sandbox; minified, that costs about half.
  const prelude = (await transform(PRELUDE, { minify: true, target: 'es2020', logLevel: 'silent' })).code;
  const cache = new SandboxCache({ ...DEFAULT_CACHE, ...options.cache });
  let loaded = 1;
  let closed = false;

  const module = (): Promise<QuickJSWASMModule> => {
    if (closed) throw new Error('the journey engine is closed');
    if (!current) { current = load(); loaded++; }
    return current;
  };
  // A poisoned module is dropped with every sandbox in it; activations still running on it keep
  // their own reference.
  const drop = async (m: Promise<QuickJSWASMModule>) => {
    if (current === m) current = null;
    cache.forget(await m);
  };

  return {
    async activate(input) {
      const m = module();
      const { poisoned, ...result } = await activate({ module: await m, prelude, cache }, input);
      if (poisoned) await drop(m);
      return result as Activation;
    },
    async render(input) {
      const m = module();
      const { poisoned, ...result } = await renderTemplate({ module: await m, prelude, cache }, input);
      if (poisoned) await drop(m);
      return result as RenderResult;
    },
    get modulesLoaded() { return loaded; },
    get cacheStats() { return { ...cache.stats }; },
    close() { closed = true; current = null; cache.clear(); },
  };
}
