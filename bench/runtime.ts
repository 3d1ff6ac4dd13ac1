// Journey engine micro-benchmark (`node dist/bench/runtime.js [--n N] [--warm N]`): CPU per
// activation of a trivial journey, of one `ctx.traits.set`, of a three-call journey with an
// immediate host, the replay cost per recorded journal entry, and a resume after 100 effects. One
// thread, real QuickJS, journeys compiled by esbuild as the server compiles them.
//
// A journey thread lives as long as its server, so figures are taken warm: WebAssembly tiers up
// and the host-side JavaScript is optimized over the first few thousand activations (the first 500
// of a fresh process cost several times what later ones do; that start is printed on its own).
import { transform } from 'esbuild';
import { createEngine, type ActivationInput, type Engine, type Host } from '../journeys/runtime/mod.js';
import type { JournalEntry } from '../schemas/mod.js';
import { arg } from './args.js';

const N = Number(arg('--n', '1000'));
const WARM = Number(arg('--warm', '3000'));

const SDK = `function journey(options, handler) { return { kind: 'journey', key: options.key, options, handler }; }`;
const compile = async (body: string) =>
  (await transform(`${SDK}\nexport default journey({ key: 'b' }, async (ctx) => {\n${body}\n});`, { format: 'iife', globalName: '__headwater_module', target: 'es2020' })).code;

const event = { id: 'ev', orgId: 'o', appId: 'a', sourceId: 's', profileId: 'p', environment: 'production', event: 'signed_up',
  properties: {}, timestamp: '2026-01-01T00:00:00.000Z', receivedAt: '2026-01-01T00:00:00.000Z', messageId: null };
const host: Host = { call: async (c) => ({ ok: true, value: c.name === 'profile.get' ? { id: 'p', traits: { name: 'Ada' } } : null }) };
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;
/** A journal as the runner hands it back: read from storage, so new objects. */
const stored = (j: unknown): JournalEntry[] => JSON.parse(JSON.stringify(j)) as JournalEntry[];

const engine = await createEngine();
const trivialCode = await compile('');
const setCode = await compile(`await ctx.traits.set('seen', true);`);

async function run(e: Engine, input: Omit<ActivationInput, 'host' | 'event' | 'execution'>, n: number, label: string): Promise<number> {
  const full: ActivationInput = { ...input, host, event, execution: { id: 'e', runId: 'r', seed: 's' } };
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const a = await e.activate(full);
    if (a.status !== 'completed') throw new Error(`${label}: ${a.status} ${'message' in a ? a.message : ''}`);
  }
  return cpuMs(process.cpuUsage(c0)) / n;
}

/** Mean CPU milliseconds (user + system) of one activation, after a short warm-up of this journey. */
async function measure(label: string, input: Omit<ActivationInput, 'host' | 'event' | 'execution'>, n = N): Promise<number> {
  await run(engine, input, Math.min(100, n), label);
  const w0 = performance.now();
  const cpu = await run(engine, input, n, label);
  console.log(`${label.padEnd(48)} ${cpu.toFixed(3).padStart(8)} ms CPU  ${((performance.now() - w0) / n).toFixed(3).padStart(8)} ms wall`);
  return cpu;
}

const cold = await run(engine, { code: setCode, journal: [] }, 500, 'cold');
console.log(`${'one traits.set, first 500 of the process'.padEnd(48)} ${cold.toFixed(3).padStart(8)} ms CPU`);
await run(engine, { code: trivialCode, journal: [] }, WARM, 'warm-up');
await run(engine, { code: setCode, journal: [] }, WARM, 'warm-up');

const trivial = await measure('trivial journey (no calls)', { code: trivialCode, journal: [] });
await measure('one traits.set (the target\'s trivial activation)', { code: setCode, journal: [] });
await measure('three calls, immediate host', { code: await compile(`const me = await ctx.profile.get(); await ctx.traits.set('seen', true); await ctx.events.track('welcomed', { name: me.traits.name });`), journal: [] });

// A bundle the size of a journey with a few helpers: compiled once per sandbox, run per activation.
const filler = Array.from({ length: 200 }, (_, i) => `function helper${i}(x) { return { id: x.id, n: ${i}, tags: [x.a, x.b].filter(Boolean) }; }`).join('\n');
const big = await compile(`const me = await ctx.profile.get(); if (me.id === 'never') helper0(me);`.replace('const me', `${filler}\nconst me`));
await measure(`one call, ${Math.round(big.length / 1024)} KiB bundle`, { code: big, journal: [] });

for (const entries of [100, 1000]) {
  const code = await compile(`for (let i = 0; i < ${entries}; i++) await ctx.traits.set('k', i);`);
  const first = await engine.activate({ code, host, event, execution: { id: 'e', runId: 'r', seed: 's' }, journal: [], limits: { maxEntries: entries + 1 } });
  const journal = stored(first.journal);
  const n = Math.max(5, Math.round(N / entries * 10));
  const live = await measure(`${entries} calls, live (host each)`, { code, journal: [], limits: { maxEntries: entries + 1 } }, n);
  const replay = await measure(`${entries} calls, replayed from the journal`, { code, journal, limits: { maxEntries: entries + 1 } }, n);
  console.log(`  replay per recorded entry: ${((replay - trivial) / entries * 1000).toFixed(1)} us CPU; live per call: ${((live - trivial) / entries * 1000).toFixed(1)} us`);
}

// A resume: the execution stopped at a sleep after 100 effects; the activation appends the sleep's
// entry and goes on (one more effect). From its parked sandbox as the runner resumes it (the journal
// saved under the parking activation's claim), from its parked sandbox with the journal compared
// entry by entry (another claim wrote it), and replayed (an engine that parks nothing). The engines
// keep every sandbox idle afterwards, so the figure is the resume itself; what a sandbox costs to
// free when the idle set is full is printed apart. One round more than printed warms the path up.
{
  const code = await compile(`for (let i = 0; i < 100; i++) await ctx.traits.set('a', i); await ctx.sleep('1h'); await ctx.traits.set('b', 2);`);
  const n = Math.min(200, Math.max(50, N));
  const keep = { idlePerCode: n + 1, idleTotal: n + 1, parkedMax: n + 1 };
  const parking = await createEngine({ cache: keep });
  const replaying = await createEngine({ cache: { ...keep, parkedMax: 0 } });
  const runs = [['resume from the parked sandbox', parking, 'L1'], ['resume, parked, journal compared', parking, 'L0'], ['resume replayed from the journal', replaying, 'L1']] as const;
  for (const [run, [label, e, journalLease]] of runs.entries()) {
    const samples: number[] = [];
    for (let round = 0; round < 4; round++) {
      const waits = [];
      for (let i = 0; i < n; i++) {
        const id = `w${run}-${round}-${i}`;
        const a = await e.activate({ code, host, event, execution: { id, runId: 'r', seed: 's', lease: 'L1' }, journal: [], limits: { fuel: 1e6 } });
        if (a.status !== 'waiting') throw new Error(a.status);
        waits.push([id, stored([...a.journal, { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position, recordedAt: new Date().toISOString() }])] as const);
      }
      const c0 = process.cpuUsage();
      let resumed = 0;
      for (const [id, journal] of waits) {
        const a = await e.activate({ code, host, event, execution: { id, runId: 'r', seed: 's', lease: 'L2', journalLease }, journal, limits: { fuel: 1e6 } });
        if (a.status !== 'completed') throw new Error(a.status);
        if (a.stats.resumed) resumed++;
      }
      if (round > 0) samples.push(cpuMs(process.cpuUsage(c0)) / n);
      if (round === 3) console.log(`${label.padEnd(48)} ${samples.map((s) => s.toFixed(3)).join(' / ').padStart(8)} ms CPU  (3 rounds; ${resumed}/${n} resumed in place)`);
    }
  }
  parking.close();
  replaying.close();
  // Freeing a loaded sandbox: what a resume adds when the idle set is already full.
  const freeing = await createEngine({ cache: { idlePerCode: 1, idleTotal: 1, parkedMax: 0 } });
  const m = 100;
  const loads: Promise<unknown>[] = [];
  // m activations in flight at once need m sandboxes; returning them frees all but one.
  const c0 = process.cpuUsage();
  for (let i = 0; i < m; i++) loads.push(freeing.activate({ code: setCode, host, event, execution: { id: `f${i}`, runId: 'r', seed: 's' }, journal: [] }));
  await Promise.all(loads);
  console.log(`${'load + run + free a sandbox (idle set full)'.padEnd(48)} ${(cpuMs(process.cpuUsage(c0)) / m).toFixed(3).padStart(8)} ms CPU`);
  freeing.close();
}
engine.close();
