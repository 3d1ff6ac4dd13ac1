// One QuickJS runtime + context with the prelude and one compiled journey (or template) loaded,
// hardened so it can serve one activation after another (runtime/harden.ts): each activation
// begins with its own limits, deadline and hooks, and open() gives it fresh module state. One
// activation at a time owns a sandbox. After an out-of-memory error (or a host stack overflow
// inside WebAssembly) QuickJS can abort while disposing, so such a sandbox is abandoned whole and
// the owner drops the module; a sandbox that failed in any other way is disposed, never reused.
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { HARDEN_SOURCE } from './harden.js';
import { DATE_SOURCE, HOST_GLOBAL, RANDOM_SOURCE, wrapModule } from './prelude.js';
import type { FailureCode, Limits } from './types.js';

export interface Failure { code: FailureCode; message: string }

/** What the prelude calls on the host side; each receives plain strings and numbers. */
export interface SandboxHooks {
  /** A ctx call: its position, or -1 when the call is refused (the hook sets `abort`). */
  call(name: string, json: string, serializeError: string): number;
  log(level: string, message: string): void;
  done(json: string): void;
  fail(message: string): void;
}

const NO_HOOKS: SandboxHooks = { call: () => -1, log: () => {}, done: () => {}, fail: () => {} };

/** Bytes of QuickJS stack; deeper recursion is a catchable `InternalError: stack overflow`. */
const MAX_STACK_BYTES = 256 * 1024;

export class Sandbox {
  /** Set by the interrupt handler, a hook, or a classified error: the run stops with it. */
  abort: Failure | null = null;
  fuelUsed = 0;
  /** The module must not be used again (see the file comment). */
  poisoned = false;
  private readonly rt: QuickJSRuntime;
  private readonly vm: QuickJSContext;
  private readonly owned: QuickJSHandle[] = [];
  private disposed = false;
  private hooks: SandboxHooks = NO_HOOKS;
  private deadline = 0;
  private settleFn: QuickJSHandle | null = null;
  private startFn: QuickJSHandle | null = null;
  private openFn: QuickJSHandle | null = null;
  private doneFn: QuickJSHandle | null = null;
  private factory: QuickJSHandle | null = null;

  constructor(readonly module: QuickJSWASMModule, private limits: Limits) {
    this.rt = module.newRuntime();
    this.rt.setMemoryLimit(limits.memoryBytes);
    this.rt.setMaxStackSize(MAX_STACK_BYTES);
    this.rt.setInterruptHandler(() => {
      this.fuelUsed++;
      if (this.abort) return true;
      if (this.fuelUsed > this.limits.fuel) { this.abort = { code: 'journey_fuel_exceeded', message: `the journey used more than its fuel of ${this.limits.fuel}` }; return true; }
      if (performance.now() > this.deadline) { this.abort = timeout(this.limits.wallMs); return true; }
      return false;
    });
    this.vm = this.rt.newContext();
    const vm = this.vm;
    const host = vm.newObject();
    this.owned.push(host);
    const fn = (name: string, impl: (...a: QuickJSHandle[]) => QuickJSHandle | undefined) => {
      const h = vm.newFunction(name, impl);
      vm.setProp(host, name, h);
      h.dispose();
    };
    fn('call', (n, j, e) => vm.newNumber(this.hooks.call(vm.getString(n), vm.getString(j), vm.getString(e))));
    fn('log', (l, m) => { this.hooks.log(vm.getString(l), vm.getString(m)); return undefined; });
    fn('done', (j) => { this.hooks.done(vm.getString(j)); return undefined; });
    fn('fail', (m) => { this.hooks.fail(vm.getString(m)); return undefined; });
    fn('invalid', (m) => { this.abort ??= { code: 'journey_output_invalid', message: vm.getString(m) }; return undefined; });
    for (const [k, v] of [['dateSource', DATE_SOURCE], ['randomSource', RANDOM_SOURCE], ['hardenSource', HARDEN_SOURCE]] as const) {
      const h = vm.newString(v);
      vm.setProp(host, k, h);
      h.dispose();
    }
    vm.setProp(vm.global, HOST_GLOBAL, host);
  }

  /** Whether a later activation may take this sandbox over. */
  get reusable(): boolean { return !this.abort && !this.poisoned && !this.disposed; }

  /** A new activation: its limits, deadline (performance.now() ms) and hooks; fuel counts from 0. */
  begin(limits: Limits, deadline: number, hooks: SandboxHooks): void {
    this.abort = null;
    this.fuelUsed = 0;
    this.deadline = deadline;
    this.hooks = hooks;
    if (limits.memoryBytes !== this.limits.memoryBytes) this.rt.setMemoryLimit(limits.memoryBytes);
    this.limits = limits;
  }

  /** Evaluates the prelude (which hardens the context), then compiles the code into its factory. */
  load(prelude: string, code: string): Failure | null {
    const pre = this.guard(() => this.vm.evalCode(prelude, 'prelude.js', { type: 'global', strict: true, strip: true }));
    if ('failure' in pre) return pre.failure;
    const fns = pre.value;
    this.settleFn = this.vm.getProp(fns, 0);
    this.startFn = this.vm.getProp(fns, 1);
    this.openFn = this.vm.getProp(fns, 2);
    this.doneFn = this.vm.getProp(fns, 3);
    fns.dispose();
    const r = this.guard(() => this.vm.evalCode(wrapModule(code), 'journey.js', { type: 'global' }));
    if ('failure' in r) return loading(r.failure);
    this.factory = r.value;
    return null;
  }

  /** Fresh per-activation state and a fresh module instance (the module body runs again). */
  open(seed: string, clock: number): Failure | null {
    const f = this.invoke(this.openFn!, [this.factory!, this.vm.newString(seed), this.vm.newNumber(clock)]);
    return f && loading(f);
  }

  start(kind: 'journey' | 'template', inputJson: string): Failure | null {
    return this.invoke(this.startFn!, [this.vm.newString(kind), this.vm.newString(inputJson)]);
  }

  settle(at: number, ok: boolean, json: string, clock: number): Failure | null {
    const vm = this.vm;
    return this.invoke(this.settleFn!, [vm.newNumber(at), ok ? vm.true : vm.false, vm.newString(json), vm.newNumber(clock)]);
  }

  /** Whether the journey handler has returned (a template reports through `done` instead); a failure when the VM does. */
  finished(): boolean | Failure {
    const r = this.guard(() => this.vm.callFunction(this.doneFn!, this.vm.undefined));
    if ('failure' in r) return r.failure;
    const v = this.vm.getNumber(r.value);
    r.value.dispose();
    return v === 1;
  }

  /** Runs every pending job (promise continuations) until none is left. */
  pump(): Failure | null {
    if (this.abort) return this.abort;
    try {
      const r = this.rt.executePendingJobs(-1);
      if (r.error) { const f = this.classify(r.error); r.error.dispose(); return f; }
      return this.abort;
    } catch (e) { return this.hostError(e); }
  }

  /** Frees the runtime, or abandons it (sets `poisoned`) when freeing is not safe. */
  dispose(): void {
    if (this.poisoned || this.disposed) return;
    this.disposed = true;
    try {
      for (const h of [this.settleFn, this.startFn, this.openFn, this.doneFn, this.factory, ...this.owned]) if (h?.alive) h.dispose();
      this.vm.dispose();
      this.rt.dispose();
    } catch {
      this.poisoned = true;
    }
  }

  private invoke(fn: QuickJSHandle, args: QuickJSHandle[]): Failure | null {
    try {
      const r = this.guard(() => this.vm.callFunction(fn, this.vm.undefined, args));
      if ('failure' in r) return r.failure;
      r.value.dispose();
      return this.abort;
    } finally {
      // The constants and the factory outlive the call; the rest were made for it.
      for (const a of args) if (a.alive && a !== this.vm.true && a !== this.vm.false && a !== this.factory) a.dispose();
    }
  }

  private guard(run: () => { error?: QuickJSHandle; value?: QuickJSHandle }): { value: QuickJSHandle } | { failure: Failure } {
    if (this.abort) return { failure: this.abort };
    let r;
    try { r = run(); } catch (e) { return { failure: this.hostError(e) }; }
    if (r.error) { const f = this.classify(r.error); r.error.dispose(); return { failure: f }; }
    if (this.abort) { r.value!.dispose(); return { failure: this.abort }; }
    return { value: r.value! };
  }

  /** An error value thrown out of the VM. */
  private classify(error: QuickJSHandle): Failure {
    if (this.abort) return this.abort;
    let message = 'an error that cannot be described';
    try {
      const d = this.vm.dump(error) as { name?: unknown; message?: unknown } | unknown;
      message = d && typeof d === 'object' && 'message' in d ? `${String((d as { name?: unknown }).name ?? 'Error')}: ${String(d.message)}` : String(d);
    } catch { /* keep the generic text */ }
    return this.failWith(message);
  }

  /** A message of an uncaught error (from the VM or reported by the prelude): which failure it is. */
  failWith(message: string): Failure {
    if (this.abort) return this.abort;
    if (/out of memory/i.test(message)) {
      this.poisoned = true;
      return (this.abort = memory(this.limits.memoryBytes));
    }
    if (/^InternalError: interrupted/.test(message)) return (this.abort = timeout(this.limits.wallMs));
    return (this.abort = { code: 'journey_error', message: message.slice(0, 2000) });
  }

  /** An exception of the host while inside WebAssembly: the module state cannot be trusted. */
  private hostError(e: unknown): Failure {
    this.poisoned = true;
    if (this.abort) return this.abort;
    const msg = e instanceof Error ? e.message : String(e);
    if (e instanceof RangeError || /out of memory|call stack/i.test(msg)) {
      return (this.abort = { code: 'journey_memory_exceeded', message: `the journey exceeded the sandbox stack or memory (${msg.slice(0, 200)})` });
    }
    return (this.abort = { code: 'journey_error', message: `the sandbox failed: ${msg.slice(0, 500)}` });
  }
}

const timeout = (wallMs: number): Failure => ({ code: 'journey_timeout', message: `the activation took longer than ${wallMs} ms` });
/** A failure of the module body (compiling it or running it): the journey fails to load. */
const loading = (f: Failure): Failure => (f.code === 'journey_error' ? { code: 'journey_error', message: `the code throws while loading: ${f.message}` } : f);
const memory = (bytes: number): Failure => ({ code: 'journey_memory_exceeded', message: `the journey exceeded its memory limit of ${bytes} bytes` });
export const timeoutFailure = timeout;
