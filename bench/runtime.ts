// Journey engine micro-benchmark (`node dist/bench/runtime.js [--n N]`): CPU per activation of a
// trivial journey, of a three-call journey with an immediate host, and the replay cost per recorded
// journal entry. One thread, real QuickJS, journeys compiled by esbuild as the server compiles them.
import { transform } from 'esbuild';
import { createEngine, type ActivationInput, type Host } from '../journeys/runtime/mod.js';
import type { JournalEntry } from '../schemas/mod.js';

const argN = process.argv.indexOf('--n');
const N = argN !== -1 ? Number(process.argv[argN + 1]) : 300;

const SDK = `function journey(options, handler) { return { kind: 'journey', key: options.key, options, handler }; }`;
const compile = async (body: string) =>
  (await transform(`${SDK}\nexport default journey({ key: 'b' }, async (ctx) => {\n${body}\n});`, { format: 'iife', globalName: '__headwater_module', target: 'es2020' })).code;

const event = { id: 'ev', orgId: 'o', appId: 'a', sourceId: 's', profileId: 'p', environment: 'production', event: 'signed_up',
  properties: {}, timestamp: '2026-01-01T00:00:00.000Z', receivedAt: '2026-01-01T00:00:00.000Z', messageId: null };
const host: Host = { call: async (c) => ({ ok: true, value: c.name === 'profile.get' ? { id: 'p', traits: { name: 'Ada' } } : null }) };

const engine = await createEngine();

/** Mean CPU milliseconds (user + system) of one activation, after a warm-up. */
async function measure(label: string, input: Omit<ActivationInput, 'host' | 'event' | 'execution'>, n = N): Promise<number> {
  const full: ActivationInput = { ...input, host, event, execution: { id: 'e', runId: 'r', seed: 's' } };
  for (let i = 0; i < Math.min(20, n); i++) await engine.activate(full);
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < n; i++) {
    const a = await engine.activate(full);
    if (a.status !== 'completed') throw new Error(`${label}: ${a.status} ${'message' in a ? a.message : ''}`);
  }
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1000 / n;
  console.log(`${label.padEnd(44)} ${cpu.toFixed(3).padStart(8)} ms CPU  ${((performance.now() - w0) / n).toFixed(3).padStart(8)} ms wall`);
  return cpu;
}

const trivial = await measure('trivial journey (no calls)', { code: await compile(''), journal: [] });
await measure('three calls, immediate host', { code: await compile(`const me = await ctx.profile.get(); await ctx.traits.set('seen', true); await ctx.events.track('welcomed', { name: me.traits.name });`), journal: [] });

// A bundle the size of a journey with a few helpers: compiling it is paid on every activation.
const filler = Array.from({ length: 200 }, (_, i) => `function helper${i}(x) { return { id: x.id, n: ${i}, tags: [x.a, x.b].filter(Boolean) }; }`).join('\n');
const big = await compile(`const me = await ctx.profile.get(); if (me.id === 'never') helper0(me);`.replace('const me', `${filler}\nconst me`));
await measure(`one call, ${Math.round(big.length / 1024)} KiB bundle`, { code: big, journal: [] });

for (const entries of [100, 1000]) {
  const code = await compile(`for (let i = 0; i < ${entries}; i++) await ctx.traits.set('k', i);`);
  const first = await engine.activate({ code, host, event, execution: { id: 'e', runId: 'r', seed: 's' }, journal: [], limits: { maxEntries: entries + 1 } });
  const journal = first.journal as JournalEntry[];
  const live = await measure(`${entries} calls, live (host each)`, { code, journal: [], limits: { maxEntries: entries + 1 } }, Math.max(5, Math.round(N / entries * 10)));
  const replay = await measure(`${entries} calls, replayed from the journal`, { code, journal, limits: { maxEntries: entries + 1 } }, Math.max(5, Math.round(N / entries * 10)));
  console.log(`  replay per recorded entry: ${((replay - trivial) / entries * 1000).toFixed(1)} us CPU; live per call: ${((live - trivial) / entries * 1000).toFixed(1)} us`);
}
// A resume: the execution stopped at a sleep after 100 effects; the activation appends the sleep's
// entry and goes on (one more effect). From its parked sandbox, and replayed (an engine that parks nothing).
{
  const code = await compile(`for (let i = 0; i < 100; i++) await ctx.traits.set('a', i); await ctx.sleep('1h'); await ctx.traits.set('b', 2);`);
  const replaying = await createEngine({ cache: { parkedMax: 0 } });
  for (const [label, e] of [['resume from the parked sandbox', engine], ['resume replayed from the journal', replaying]] as const) {
    const n = Math.min(100, Math.max(50, N));
    const waits = [];
    for (let i = 0; i < n; i++) {
      const a = await e.activate({ code, host, event, execution: { id: `w${i}`, runId: 'r', seed: 's' }, journal: [], limits: { fuel: 1e6 } });
      if (a.status !== 'waiting') throw new Error(a.status);
      waits.push([`w${i}`, [...a.journal, { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position }]] as const);
    }
    const c0 = process.cpuUsage();
    let resumed = 0;
    for (const [id, journal] of waits) {
      const a = await e.activate({ code, host, event, execution: { id, runId: 'r', seed: 's' }, journal, limits: { fuel: 1e6 } });
      if (a.status !== 'completed') throw new Error(a.status);
      if (a.stats.resumed) resumed++;
    }
    const c = process.cpuUsage(c0);
    console.log(`${label.padEnd(44)} ${((c.user + c.system) / 1000 / n).toFixed(3).padStart(8)} ms CPU  (${resumed}/${n} resumed in place)`);
  }
  replaying.close();
}
engine.close();
