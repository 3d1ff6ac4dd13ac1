// Public entry of the journey runtime: a sandboxed, deterministic engine that runs compiled journey
// code against a journal, and renders compiled e-mail templates. Durable state (executions, timers,
// the journal's storage) belongs to the caller.
export { createEngine } from './engine.js';
export type { Engine, EngineOptions } from './engine.js';
export { DEFAULT_LIMITS } from './types.js';
export { ACTIVATIONS_PER_THREAD, DEFAULT_CACHE } from './cache.js';
export type { CacheLimits, CacheStats } from './cache.js';
export type {
  Activation, ActivationInput, ActivationStats, FailureCode, Host, HostCall, Limits, LogRecord, RenderInput, RenderResult, Wait,
} from './types.js';
export { CALL_NAMES, MAX_ARGS_CHARS, MAX_WAIT_NAMES, canonicalJson, checkCall } from './calls.js';
export type { CallName, EffectName } from './calls.js';
export { durationMs, MAX_DURATION_MS } from './duration.js';
export { MODULE_GLOBAL } from './prelude.js';
