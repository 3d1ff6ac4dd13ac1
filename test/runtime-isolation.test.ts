// The engine reuses sandboxes (runtime/cache.ts): these check that one activation never sees what
// another wrote, that fuel, wall-clock and memory limits hold in a reused sandbox, and that a resume
// from a parked sandbox answers exactly what a replay from the journal answers.
import t from 'tap';
import { transform } from 'esbuild';
import { ACTIVATIONS_PER_THREAD, createEngine, type Activation, type Engine, type Host } from '../journeys/runtime/mod.js';
import type { JournalEntry } from '../schemas/mod.js';

/** Journal entries without `recordedAt` (the wall-clock time of recording, which two runs never share). */
const bare = <T>(x: T): T => JSON.parse(JSON.stringify(x, (k, v) => (k === 'recordedAt' ? undefined : v)));

const SDK = `function journey(options, handler) { return { kind: 'journey', key: options.key, options, handler }; }`;
const journey = async (body: string, prefix = '') => (await transform(
  `${SDK}\n${prefix}\nexport default journey({ key: 'j', trigger: { event: 'e' } }, async (ctx) => {\n${body}\n});`,
  { format: 'iife', globalName: '__headwater_module', target: 'es2020', logLevel: 'silent' })).code;
const EVENT = { id: 'ev_1', event: 'e', properties: {}, receivedAt: '2026-01-01T10:00:01.000Z' };
const host: Host = { call: async (c) => ({ ok: true, value: c.name === 'profile.get' ? { id: 'p', traits: { n: 1 } } : null }) };
const execution = (id: string) => ({ id, runId: 'run_1', seed: `seed-${id}` });

const cached = await createEngine({ cache: { parkMinEntries: 0 } });
const replaying = await createEngine({ cache: { parkedMax: 0 } });
t.teardown(() => { cached.close(); replaying.close(); });

const logOf = (a: Activation) => JSON.parse(a.logs[0]!.message) as unknown;
const run = (engine: Engine, code: string, id = 'exe_1', journal: JournalEntry[] = [], limits?: Record<string, number>) =>
  engine.activate({ code, execution: execution(id), event: EVENT, journal, host, now: 1_000_000, ...(limits ? { limits } : {}) });

// Each writes shared state one way; the reader (another journey, and the writer's next activation)
// must find none of it.
const WRITES: Array<[string, string]> = [
  ['a property of globalThis', `globalThis.leak = 1;`],
  ['an undeclared variable', `leak2 = 1;`],
  ['a var in indirect eval', `(0, eval)('var leak3 = 1');`],
  ['a new Function global', `Function('leak4 = 1')();`],
  ['Object.prototype', `Object.prototype.leak5 = 1;`],
  ['Array.prototype', `Array.prototype.leak6 = function () { return 1; };`],
  ['a built-in replaced', `JSON.stringify = function () { return 'leak7'; };`],
  ['Math.random replaced', `Math.random = function () { return 0.5; };`],
  ['Date replaced', `Date = function () {}; Date.now = function () { return 7; };`],
  ['the generator prototype', `Object.getPrototypeOf(function* () {}).prototype.leak8 = 1;`],
  ['the iterator prototype', `Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())).leak9 = 1;`],
  ['a deleted built-in', `delete globalThis.Map;`],
  ['Promise.prototype.then', `Promise.prototype.then = function () { return 'leak10'; };`],
  // The methods of ctx are made once per sandbox and shared by its activations.
  ['a ctx method', `ctx.traits.set.leak11 = 1;`],
  ['the prototype of a ctx method', `ctx.sleep.prototype.leak12 = 1;`],
  ['a ctx namespace', `ctx.log.leak13 = 1; ctx.email.send = null;`],
];
const READ = `ctx.log.info(JSON.stringify([typeof globalThis.leak, typeof globalThis.leak2, typeof globalThis.leak3, typeof globalThis.leak4,
  ({}).leak5, typeof [].leak6, JSON.stringify({ a: 1 }), Math.random() === 0.5, Date.now(), Object.getPrototypeOf(function* () {}).prototype.leak8,
  [][Symbol.iterator]().leak9, typeof Map, typeof Promise.resolve(1).then(function () {}).then,
  typeof ctx.traits.set.leak11, typeof ctx.sleep.prototype.leak12, typeof ctx.log.leak13, typeof ctx.email.send]));`;
const CLEAN = ['undefined', 'undefined', 'undefined', 'undefined', null, 'undefined', '{"a":1}', false, Date.parse(EVENT.receivedAt), null, null, 'function', 'function',
  'undefined', 'undefined', 'undefined', 'function'];

t.test('globals written by one activation are invisible to the next, of any journey', async (t) => {
  const reader = await journey(READ);
  t.same(logOf(await run(cached, reader)), CLEAN, 'a fresh sandbox reads the clean values');
  for (const [what, write] of WRITES) {
    // One code that writes or reads as its event says, so both run in the same (reused) sandbox. A
    // failing write may throw (a strict-mode TypeError): the write failing is the point.
    const code = await journey(`if (ctx.event.properties.write) { try { ${write} } catch (e) {} await ctx.traits.set('wrote', true); return; } ${READ}`);
    const go = (write: boolean) => cached.activate({ code, execution: execution('exe_w'), event: { ...EVENT, properties: { write } }, journal: [], host, now: 1_000_000 });
    t.same(logOf(await go(false)), CLEAN, `${what}: clean before`);
    const reused = cached.cacheStats.reused;
    t.equal((await go(true)).status, 'completed', `${what}: the writer completes`);
    t.same(logOf(await go(false)), CLEAN, `${what}: the next activation in the same sandbox sees nothing`);
    t.equal(cached.cacheStats.reused, reused + 2, 'both ran in the reused sandbox');
    t.same(logOf(await run(cached, reader)), CLEAN, `${what}: another journey's activation sees nothing`);
  }
});

t.test('module-level variables start fresh in every activation of a reused sandbox', async (t) => {
  const code = await journey(`counter++; list.push(1); ctx.log.info(JSON.stringify([counter, list.length]));`, `let counter = 0; const list = [];`);
  const before = cached.cacheStats.reused;
  for (let i = 0; i < 3; i++) t.same(logOf(await run(cached, code, `exe_m${i}`)), [1, 1]);
  t.ok(cached.cacheStats.reused >= before + 2, 'the same sandbox served them');
});

t.test('assigning an inherited name still works on ordinary objects (override names tamed)', async (t) => {
  const code = await journey(`
    const o = {}; o.toString = function () { return 'mine'; }; o.constructor = 5; o.valueOf = () => 3;
    class MyError extends Error {} const e = new MyError(); e.name = 'MyError'; e.message = 'set later';
    function F() {} F.prototype.toString = function () { return 'F'; };
    ctx.log.info(JSON.stringify([String(o), o.constructor, +o, String(e), String(new F()), ({}).toString()]));`);
  t.same(logOf(await run(cached, code)), ['mine', 5, 3, 'MyError: set later', 'F', '[object Object]']);
});

t.test('fuel, wall-clock and memory limits hold in a reused sandbox, and it is not reused after', async (t) => {
  const code = await journey(`
    const mode = ctx.event.properties.mode;
    if (mode === 'spin') for (;;) {}
    if (mode === 'grow') { const a = []; for (;;) a.push([a.length, 2, 3, 4, 5, 6, 7, 8]); }
    await ctx.traits.set('ok', mode || 'none');`);
  const go = (mode: string | undefined, limits?: Record<string, number>) =>
    cached.activate({ code, execution: execution('exe_l'), event: { ...EVENT, properties: mode ? { mode } : {} }, journal: [], host, now: 1, ...(limits ? { limits } : {}) });
  for (const [mode, limits, code_] of [
    ['spin', { fuel: 20 }, 'journey_fuel_exceeded'],
    ['spin', { wallMs: 100, fuel: 1e9 }, 'journey_timeout'],
    ['grow', { memoryBytes: 4 * 1024 * 1024 }, 'journey_memory_exceeded'],
  ] as const) {
    t.equal((await go(undefined)).status, 'completed', 'a normal activation leaves an idle sandbox');
    const reusedBefore = cached.cacheStats.reused;
    const a = await go(mode, limits);
    t.equal(a.status === 'failed' && a.code, code_, `${mode} in a reused sandbox: ${a.status === 'failed' ? a.message : a.status}`);
    t.equal(cached.cacheStats.reused, reusedBefore + 1, 'it ran in a reused sandbox');
    t.equal((await go(undefined)).status, 'completed', 'the next activation runs');
  }
});

// Journeys that stop and resume; each step appends the wait's entry and activates again.
const RESUMING: Array<[string, string]> = [
  ['sleep between effects, with logs', `ctx.log.info('a'); await ctx.traits.set('a', 1); await ctx.sleep('1h'); ctx.log.info('b', Date.now()); await ctx.traits.set('b', 2);`],
  ['several waits, clock and randomness', `const seen = [Math.random()]; await ctx.sleep('1m'); seen.push(Date.now(), Math.random()); await ctx.waitForEvent('paid', { timeout: '1d' }); seen.push(Date.now(), Math.random()); await ctx.sleep(5); ctx.log.info(JSON.stringify(seen)); await ctx.events.track('done', { n: seen.length });`],
  ['a wait issued with another call', `const [p] = await Promise.all([ctx.profile.get(), ctx.sleep('2h'), ctx.traits.set('x', 1)]); ctx.log.info(p.id); await ctx.traits.set('y', 2);`],
  ['module state across the wait', `counter++; await ctx.sleep('1s'); counter++; ctx.log.info(String(counter));`],
  ['an event answers the wait', `const e = await ctx.waitForEvent(['paid', 'left'], { timeout: '1h' }); ctx.log.info(JSON.stringify(e)); await ctx.traits.set('paid', e !== null);`],
];

t.test('a resume from a parked sandbox answers what a replay answers', async (t) => {
  for (const [what, body] of RESUMING) {
    const code = await journey(body, 'let counter = 0;');
    const id = `exe_r_${what.replace(/\W+/g, '_')}`;
    const answers: Array<Array<Omit<Activation, 'stats'>>> = [];
    const resumedCount: number[] = [];
    for (const engine of [cached, replaying]) {
      const steps: Array<Omit<Activation, 'stats'>> = [];
      let journal: JournalEntry[] = [];
      let resumes = 0;
      for (let step = 0; step < 10; step++) {
        const { stats, ...a } = await run(engine, code, id, journal);
        if (stats.resumed) resumes++;
        steps.push(a);
        if (a.status !== 'waiting') break;
        const value = a.wait.kind === 'event' ? { event: 'paid', receivedAt: '2026-01-02T00:00:00.000Z' } : null;
        journal = [...a.journal, { call: a.wait.call, result: { ok: true, value }, at: a.wait.position }];
      }
      answers.push(steps);
      resumedCount.push(resumes);
    }
    t.equal(answers[0]!.at(-1)!.status, 'completed', `${what}: completes`);
    t.same(bare(answers[0]), bare(answers[1]), `${what}: every step answers the same either way`);
    t.equal(resumedCount[0], answers[0]!.length - 1, `${what}: the cached engine resumed every wait from its parked sandbox`);
    t.equal(resumedCount[1], 0, `${what}: the other replayed every time`);
  }
});

t.test('a journal that does not continue the parked state falls back to replay', async (t) => {
  const code = await journey(`const p = await ctx.profile.get(); await ctx.sleep('1h'); ctx.log.info(JSON.stringify(p)); await ctx.traits.set('k', p.id);`);
  const a = await run(cached, code, 'exe_f');
  if (a.status !== 'waiting') { t.fail(a.status); return; }
  const wake = { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position };
  // Another process recorded another profile at position 0 (the parked sandbox saw 'p').
  const other: JournalEntry[] = [{ ...a.journal[0]!, result: { ok: true, value: { id: 'q' } } }, wake];
  const b = await run(cached, code, 'exe_f', other);
  t.equal(b.stats.resumed, false, 'replayed');
  t.same(b.logs.map((l) => l.message), ['{"id":"q"}'], 'from the journal it was given');
  // Another run id (a restart) or a journal ahead of the parked state: replay as well.
  const c = await run(cached, code, 'exe_g');
  if (c.status !== 'waiting') return;
  const d = await cached.activate({ code, execution: { ...execution('exe_g'), runId: 'run_2' }, event: EVENT, host, now: 1, journal: [...c.journal, wake] });
  t.equal(d.stats.resumed, false);
  t.equal(d.status, 'completed');
});

t.test('a journal saved under the parking claim resumes without a comparison; another claim\'s is compared', async (t) => {
  const code = await journey(`const p = await ctx.profile.get(); await ctx.sleep('1h'); ctx.log.info(JSON.stringify(p)); await ctx.traits.set('k', p.id);`);
  const under = (id: string, lease: string, journalLease?: string, journal: JournalEntry[] = []) =>
    cached.activate({ code, execution: { ...execution(id), lease, ...(journalLease ? { journalLease } : {}) }, event: EVENT, journal, host, now: 1_000_000 });
  for (const [what, journalLease, resumed, logged] of [
    // The runner hands in the lease of the save that wrote the journal: the parking activation's
    // own, so the sandbox stopped exactly there and its state stands (the journal is not read).
    ['saved under the parking claim', 'L1', true, '{"id":"p","traits":{"n":1}}'],
    // Another claim wrote it (a takeover after the lease expired): compared, and it differs.
    ['written by another claim', 'L7', false, '{"id":"q"}'],
    ['no lease handed in', undefined, false, '{"id":"q"}'],
  ] as const) {
    const id = `exe_l_${journalLease ?? 'none'}`;
    const a = await under(id, 'L1');
    if (a.status !== 'waiting') { t.fail(a.status); return; }
    const wake = { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position };
    const other: JournalEntry[] = [{ ...a.journal[0]!, result: { ok: true, value: { id: 'q' } } }, wake];
    const b = await under(id, 'L2', journalLease, other);
    t.equal(b.stats.resumed, resumed, `${what}: ${resumed ? 'resumed in place' : 'replayed'}`);
    t.same(b.logs.map((l) => l.message), [logged], `${what}: the profile ${resumed ? 'the parked run read' : 'of the journal it was given'}`);
  }
  // The same journal as parked, handed in with another claim's lease: compared, equal, resumed.
  const a = await under('exe_l_same', 'L1');
  if (a.status !== 'waiting') { t.fail(a.status); return; }
  const same = [...a.journal.map((e) => ({ ...e })), { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position }];
  t.equal((await under('exe_l_same', 'L2', 'L7', same)).stats.resumed, true, 'an equal journal from another claim resumes in place');
});

t.test('a short journal is not parked by default: it replays', async (t) => {
  const engine = await createEngine();
  t.teardown(() => engine.close());
  for (const [entries, parks] of [[3, false], [16, true]] as const) {
    const code = await journey(`for (let i = 0; i < ${entries}; i++) await ctx.traits.set('k', i); await ctx.sleep('1h'); await ctx.traits.set('done', true);`);
    const a = await run(engine, code, `exe_s${entries}`);
    if (a.status !== 'waiting') { t.fail(a.status); return; }
    const b = await run(engine, code, `exe_s${entries}`, [...a.journal, { call: a.wait.call, result: { ok: true, value: null }, at: a.wait.position }]);
    t.equal(b.status, 'completed');
    t.equal(b.stats.resumed, parks, `${entries} entries: ${parks ? 'resumed in place' : 'replayed'}`);
  }
});

t.test('parked sandboxes are bounded; an evicted execution replays', async (t) => {
  const small = await createEngine({ cache: { parkedMax: 2, parkMinEntries: 0 } });
  t.teardown(() => small.close());
  const code = await journey(`await ctx.sleep('1h'); await ctx.traits.set('done', true);`);
  const waits = [];
  for (const id of ['x1', 'x2', 'x3']) waits.push([id, await run(small, code, id)] as const);
  t.equal(small.cacheStats.parked, 2);
  t.ok(small.cacheStats.evicted >= 1);
  const resumed: Record<string, boolean | undefined> = {};
  for (const [id, a] of waits) {
    if (a.status !== 'waiting') continue;
    const b = await run(small, code, id, [...a.journal, { call: a.wait.call, result: { ok: true, value: null }, at: a.wait.position }]);
    t.equal(b.status, 'completed');
    resumed[id] = b.stats.resumed;
  }
  t.same(resumed, { x1: false, x2: true, x3: true }, 'the oldest was evicted and replayed');
});

t.test('an engine keeps an idle sandbox for every activation a runner thread holds at once', async (t) => {
  // A runner thread holds ACTIVATIONS_PER_THREAD activations, often of one journey. Each waits for
  // its host call here until all have started, so all are in hand together; the second round must
  // find every sandbox idle instead of loading new ones (~2 ms of CPU each).
  const engine = await createEngine();
  t.teardown(() => engine.close());
  const code = await journey(`await ctx.traits.set('n', 1);`);
  const round = async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => { open = r; });
    let started = 0;
    const gated: Host = { call: async () => { if (++started === ACTIVATIONS_PER_THREAD) open(); await gate; return { ok: true, value: null }; } };
    const all = await Promise.all(Array.from({ length: ACTIVATIONS_PER_THREAD }, (_, i) =>
      engine.activate({ code, execution: execution(`exe_c${i}`), event: EVENT, journal: [], host: gated, now: 1_000_000 })));
    t.ok(all.every((a) => a.status === 'completed'), 'every activation completed');
  };
  await round();
  const created = engine.cacheStats.created;
  t.equal(created, ACTIVATIONS_PER_THREAD, 'one sandbox per activation in hand');
  await round();
  t.equal(engine.cacheStats.created, created, 'the second round loaded no sandbox');
});
