// The journey engine (runtime/): real QuickJS, journeys and templates compiled by esbuild the way
// the server's compile step does (an IIFE assigning globalThis.__headwater_module). Activation,
// replay, nondeterminism, waits, restart, logs, determinism of clock and randomness, each failure
// code, argument validation and template rendering, through the engine's public module API.
import t, { type Test } from 'tap';
import { transform } from 'esbuild';
import { createEngine, type Activation, type Host, type HostCall } from '../journeys/runtime/mod.js';
import type { JournalEntry, JournalResult } from '../schemas/mod.js';
import { until } from './helpers/server.js';

/** Journal entries without `recordedAt` (the wall-clock time of recording, which two runs never share). */
const bare = <T>(x: T): T => JSON.parse(JSON.stringify(x, (k, v) => (k === 'recordedAt' ? undefined : v)));

const engine = await createEngine();
t.teardown(() => engine.close());

// Stand-ins for the SDK's journey() and template(): they return the definition shape the server
// compiles and loads.
const SDK = `function journey(options, handler) { return { kind: 'journey', key: options.key, options, handler }; }
function template(options, render) { return { kind: 'template', key: options.key, options, render }; }`;

async function compile(esm: string): Promise<string> {
  return (await transform(`${SDK}\n${esm}`, { format: 'iife', globalName: '__headwater_module', target: 'es2020', logLevel: 'silent' })).code;
}
/** A journey whose handler body is `body` (inside `async (ctx) => { ... }`). */
const journey = (body: string, prefix = '') => compile(`${prefix}\nexport default journey({ key: 'j', trigger: { event: 'signed_up' } }, async (ctx) => {\n${body}\n});`);
const templateOf = (fn: string) => compile(`export default template({ key: 't', propsSchema: { type: 'object' } }, ${fn});`);

const EVENT = {
  id: 'ev_1', orgId: 'org_1', appId: 'app_1', sourceId: 'src_1', profileId: 'prof_1', environment: 'production',
  event: 'signed_up', properties: { plan: 'pro' }, timestamp: '2026-01-01T10:00:00.000Z', receivedAt: '2026-01-01T10:00:01.000Z', messageId: null,
};
const PROFILE = { id: 'prof_1', traits: { name: 'Ada' } };

interface FakeHost extends Host { calls: HostCall[] }
/** A host answering each effect from `answer` (default: the profile for profile.get, else null). */
function fakeHost(answer: (c: HostCall) => JournalResult | Promise<JournalResult> = defaultAnswer): FakeHost {
  const calls: HostCall[] = [];
  return { calls, call: async (c) => { calls.push(c); return answer(c); } };
}
function defaultAnswer(c: HostCall): JournalResult {
  if (c.name === 'profile.get') return { ok: true, value: PROFILE };
  if (c.name === 'profiles.get') return { ok: true, value: { id: c.args.id, traits: {} } };
  return { ok: true, value: null };
}

const execution = { id: 'exe_1', runId: 'run_1', seed: 'seed-1' };
function run(code: string, journal: JournalEntry[] = [], host: Host = fakeHost(), extra: Record<string, unknown> = {}): Promise<Activation> {
  return engine.activate({ code, execution, event: EVENT, journal, host, now: 1_000_000, ...extra });
}
function failed(t: Test, a: Activation, code: string, match?: RegExp) {
  t.equal(a.status, 'failed', `fails (${a.status === 'failed' ? a.message : a.status})`);
  if (a.status === 'failed') {
    t.equal(a.code, code);
    if (match) t.match(a.message, match);
  }
}

const SEVEN_CALLS = `
  const me = await ctx.profile.get();
  ctx.log.info('hello', me.traits.name);
  await ctx.traits.set('stage', 'welcomed');
  await ctx.traits.unset('temp');
  await ctx.events.track('welcomed', { step: 1, plan: ctx.event.properties.plan });
  await ctx.email.send('welcome-email', { name: me.traits.name });
  await ctx.webhook.send('crm', { profileId: me.id });
  const other = await ctx.profiles.get('prof_2');
  ctx.log.warn('done with', other.id);
`;

t.test('a journey of several calls completes, the host called once per effect', async (t) => {
  const host = fakeHost();
  const a = await run(await journey(SEVEN_CALLS), [], host);
  t.equal(a.status, 'completed');
  t.same(host.calls.map((c) => [c.name, c.position, c.idempotencyKey]), [
    ['profile.get', 0, 'exe_1:run_1:0'], ['traits.set', 1, 'exe_1:run_1:1'], ['traits.unset', 2, 'exe_1:run_1:2'], ['events.track', 3, 'exe_1:run_1:3'],
    ['email.send', 4, 'exe_1:run_1:4'], ['webhook.send', 5, 'exe_1:run_1:5'], ['profiles.get', 6, 'exe_1:run_1:6'],
  ]);
  t.same(a.journal.map((e) => e.call), [
    { name: 'profile.get', args: {} },
    { name: 'traits.set', args: { key: 'stage', value: 'welcomed' } },
    { name: 'traits.unset', args: { key: 'temp' } },
    { name: 'events.track', args: { event: 'welcomed', properties: { step: 1, plan: 'pro' } } },
    { name: 'email.send', args: { template: 'welcome-email', props: { name: 'Ada' } } },
    { name: 'webhook.send', args: { destination: 'crm', payload: { profileId: 'prof_1' } } },
    { name: 'profiles.get', args: { id: 'prof_2' } },
  ]);
  t.same(a.journal.map((e) => e.at), [0, 1, 2, 3, 4, 5, 6]);
  t.same(a.journal[0]!.result, { ok: true, value: PROFILE });
  t.same(a.journal[1]!.result, { ok: true, value: null });
  t.same(a.logs, [{ seq: 0, level: 'info', message: 'hello Ada' }, { seq: 1, level: 'warn', message: 'done with prof_2' }]);
  t.equal(a.stats.hostCalls, 7);
  t.equal(a.stats.replayed, 0);

  t.test('replay with the full journal calls the host zero times', async (t) => {
    const again = fakeHost();
    const b = await run(await journey(SEVEN_CALLS), a.journal, again);
    t.equal(b.status, 'completed');
    t.equal(again.calls.length, 0);
    t.same(bare(b.journal), bare(a.journal));
    t.equal(b.stats.replayed, 7);
    // Only lines after the last recorded entry come back, with the seq they had: the caller upserts by seq.
    t.same(b.logs, [{ seq: 1, level: 'warn', message: 'done with prof_2' }]);
  });

  t.test('a partial journal: recorded calls replay, the rest go to the host', async (t) => {
    const again = fakeHost();
    const b = await run(await journey(SEVEN_CALLS), a.journal.slice(0, 3), again);
    t.equal(b.status, 'completed');
    t.same(again.calls.map((c) => c.position), [3, 4, 5, 6]);
    t.same(bare(b.journal), bare(a.journal));
    t.same(b.logs.map((l) => l.seq), [1], 'the line before position 3 was returned by the earlier activation');
  });

  t.test('a journal recorded from another version of the code is nondeterministic', async (t) => {
    const changed = SEVEN_CALLS.replace("'welcome-email'", "'welcome-email-v2'");
    const again = fakeHost();
    const b = await run(await journey(changed), a.journal, again);
    failed(t, b, 'journey_nondeterministic', /call 4 is email\.send .*welcome-email-v2.*journal records email\.send/);
    t.equal(again.calls.length, 0, 'nothing reaches the host');

    const reordered = await journey(`await ctx.traits.set('stage', 'welcomed'); await ctx.profile.get();`);
    failed(t, await run(reordered, a.journal, again), 'journey_nondeterministic', /call 0 is traits\.set/);

    const shorter = await journey(`await ctx.profile.get();`);
    failed(t, await run(shorter, a.journal, again), 'journey_nondeterministic', /finished after 1 calls, but the journal records 7/);
    t.equal(again.calls.length, 0);
  });
});

t.test('argument order inside objects does not matter for replay (stored JSON reorders members)', async (t) => {
  const code = await journey(`await ctx.events.track('e', { b: 1, a: { d: 2, c: 3 } }); const p = await ctx.profile.get(); ctx.log.info(Object.keys(p).join(','));`);
  const first = await run(code, [], fakeHost((c) => (c.name === 'profile.get' ? { ok: true, value: { z: 1, id: 'p', a: 2 } } : { ok: true, value: null })));
  t.equal(first.status, 'completed');
  const stored = JSON.parse(JSON.stringify(first.journal)) as JournalEntry[];
  stored[0]!.call.args = { properties: { a: { c: 3, d: 2 }, b: 1 }, event: 'e' } as never;
  stored[1]!.result = { ok: true, value: { id: 'p', a: 2, z: 1 } };
  const again = await run(code, stored.slice(0, 1).concat([{ ...stored[1]!, at: 1 }]), fakeHost());
  t.equal(again.status, 'completed');
  t.same(first.logs.map((l) => l.message), ['a,id,z']);
  t.same(again.logs.map((l) => l.message), ['a,id,z'], 'the sandbox sees members in one canonical order');
});

t.test('calls issued together get positions in call order and replay identically', async (t) => {
  const code = await journey(`
    const [a, b] = await Promise.all([ctx.profiles.get('x'), ctx.profiles.get('y')]);
    await ctx.traits.set('pair', a.id + b.id);`);
  const host = fakeHost();
  const a = await run(code, [], host);
  t.equal(a.status, 'completed');
  t.same(a.journal.map((e) => [e.at, e.call.name, e.call.args]), [[0, 'profiles.get', { id: 'x' }], [1, 'profiles.get', { id: 'y' }], [2, 'traits.set', { key: 'pair', value: 'xy' }]]);
  const again = fakeHost();
  const b = await run(code, a.journal, again);
  t.equal(b.status, 'completed');
  t.equal(again.calls.length, 0);
});

t.test('sleep ends the activation waiting; it resumes after the caller appends the entry', async (t) => {
  const code = await journey(`
    await ctx.traits.set('a', 1);
    ctx.log.info('before sleep');
    await ctx.sleep('2h');
    ctx.log.info('after sleep');
    await ctx.traits.set('b', 2);`);
  const host = fakeHost();
  const a = await run(code, [], host);
  t.equal(a.status, 'waiting');
  if (a.status !== 'waiting') return;
  t.same(a.wait, { kind: 'sleep', until: 1_000_000 + 7_200_000, position: 1, call: { name: 'sleep', args: { duration: '2h' } } });
  t.equal(a.journal.length, 1, 'the sleep itself is not recorded yet');
  t.same(a.logs.map((l) => [l.seq, l.message]), [[0, 'before sleep']]);
  t.equal(host.calls.length, 1);

  const journal = [...a.journal, { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position }];
  const b = await run(code, journal, host);
  t.equal(b.status, 'completed');
  t.same(host.calls.map((c) => c.position), [0, 2], 'the first effect is not repeated');
  t.same(b.logs.map((l) => [l.seq, l.message]), [[1, 'after sleep']]);
  t.same(b.journal.map((e) => e.call.name), ['traits.set', 'sleep', 'traits.set']);

  t.test('an integer duration in milliseconds', async (t) => {
    const c = await run(await journey(`await ctx.sleep(1500);`));
    t.equal(c.status === 'waiting' && c.wait.until, 1_000_000 + 1500);
  });
});

t.test('waitForEvent waits for names with a timeout; the Event or null resumes it', async (t) => {
  const code = await journey(`
    const ev = await ctx.waitForEvent(['activated', 'upgraded'], { timeout: '1d' });
    if (ev) await ctx.traits.set('activatedBy', ev.event);
    else await ctx.traits.set('activatedBy', null);`);
  const a = await run(code);
  t.equal(a.status, 'waiting');
  if (a.status !== 'waiting') return;
  t.same(a.wait, { kind: 'event', names: ['activated', 'upgraded'], until: 1_000_000 + 86_400_000, position: 0,
    call: { name: 'waitForEvent', args: { event: ['activated', 'upgraded'], timeout: '1d' } } });

  const answered = { ...EVENT, id: 'ev_2', event: 'upgraded', receivedAt: '2026-01-01T12:00:00.000Z' };
  const host = fakeHost();
  const b = await run(code, [{ call: a.wait.call, result: { ok: true, value: answered }, at: 0 }], host);
  t.equal(b.status, 'completed');
  t.same(host.calls.map((c) => c.args), [{ key: 'activatedBy', value: 'upgraded' }]);

  const host2 = fakeHost();
  const c = await run(code, [{ call: a.wait.call, result: { ok: true, value: null }, at: 0 }], host2);
  t.equal(c.status, 'completed');
  t.same(host2.calls.map((x) => x.args), [{ key: 'activatedBy', value: null }], 'null on timeout');

  const single = await run(await journey(`await ctx.waitForEvent('activated', { timeout: 60000 });`));
  t.same(single.status === 'waiting' && single.wait.kind === 'event' && single.wait.names, ['activated']);
});

t.test('a recorded error result is thrown inside the sandbox and can be caught', async (t) => {
  const code = await journey(`
    try { await ctx.profiles.get('elsewhere'); ctx.log.info('no throw'); }
    catch (e) { ctx.log.info('caught ' + e.code + ': ' + e.message + ' ' + (e instanceof Error)); }
    await ctx.webhook.send('unknown', {}).catch((e) => ctx.log.info('webhook ' + e.code));
    await ctx.traits.set('after', true);`);
  const host = fakeHost((c) => (c.name === 'traits.set' ? { ok: true, value: null } : { ok: false, error: { code: 'not_found', message: `no ${c.name} target` } }));
  const a = await run(code, [], host);
  t.equal(a.status, 'completed');
  t.same(a.logs.map((l) => l.message), ['caught not_found: no profiles.get target true', 'webhook not_found']);
  t.same(a.journal[0]!.result, { ok: false, error: { code: 'not_found', message: 'no profiles.get target' } });
  const again = fakeHost();
  const b = await run(code, a.journal, again);
  t.equal(b.status, 'completed');
  t.equal(again.calls.length, 0);

  const uncaught = await run(await journey(`await ctx.profiles.get('elsewhere');`), [], fakeHost(() => ({ ok: false, error: { code: 'forbidden', message: 'other app' } })));
  failed(t, uncaught, 'journey_error', /other app/);
});

t.test('Date.now and Math.random are the same across replays and differ by position', async (t) => {
  const code = await journey(`
    const seen = [Date.now(), new Date().toISOString(), Math.random(), Math.random()];
    await ctx.traits.set('k', 'v');
    seen.push(Date.now(), Math.random());
    await ctx.sleep('1h');
    seen.push(Date.now(), new Date().getTime(), Math.random());
    ctx.log.info(JSON.stringify(seen));`);
  const a = await run(code);
  t.equal(a.status, 'waiting');
  if (a.status !== 'waiting') return;
  const journal = [...a.journal, { call: a.wait.call, result: { ok: true as const, value: null }, at: a.wait.position }];
  const runs = await Promise.all([run(code, journal), run(code, journal, fakeHost(), { now: 9_999_999_999 })]);
  const seen = runs.map((r) => { t.equal(r.status, 'completed'); return JSON.parse(r.logs[0]!.message) as unknown[]; });
  t.same(seen[0], seen[1], 'two replays (at different wall-clock times) see the same values');
  const [t0, iso, r0, r0b, t1, r1, t2, t2b, r2] = seen[0] as [number, string, number, number, number, number, number, number, number];
  const start = Date.parse(EVENT.receivedAt);
  t.equal(t0, start, 'the clock starts at the trigger event');
  t.equal(iso, EVENT.receivedAt);
  t.equal(t1, start, 'an effect call does not move the clock');
  t.equal(t2, start + 3_600_000, 'a sleep moves it by its duration');
  t.equal(t2b, t2);
  t.not(r0, r0b, 'successive draws differ');
  t.ok(new Set([r0, r1, r2]).size === 3, 'each position has its own sequence');
  for (const r of [r0, r0b, r1, r2]) t.ok(r >= 0 && r < 1);

  const other = await engine.activate({ code, execution: { ...execution, seed: 'seed-2' }, event: EVENT, journal, host: fakeHost() });
  t.not(JSON.parse(other.logs[0]!.message)[2], r0, 'another execution seed draws other numbers');
});

t.test('replaced built-ins do not hand journey code the real clock', async (t) => {
  const a = await run(await journey(`
    let leaked = null;
    const orig = Reflect.construct, origApply = Reflect.apply;
    Reflect.construct = function (T, args, nt) { leaked = T; return orig(T, args, nt); };
    Reflect.apply = function (f, self, args) { leaked = self; return origApply(f, self, args); };
    const d = new Date();
    Reflect.construct = orig; Reflect.apply = origApply;
    const proto = Object.getPrototypeOf(d);
    ctx.log.info(JSON.stringify([leaked === null, d.getTime(), proto.constructor === Date, proto.constructor.now(), typeof Math.random.call]));`));
  const start = Date.parse(EVENT.receivedAt);
  t.same(JSON.parse(a.logs[0]!.message), [true, start, true, start, 'function']);
});

t.test('local time in the sandbox is UTC whatever the host time zone', async (t) => {
  const before = process.env.TZ;
  process.env.TZ = 'America/New_York';
  t.teardown(() => { if (before === undefined) delete process.env.TZ; else process.env.TZ = before; });
  t.equal(new Date(0).getHours(), 19, 'the host is in New York');
  const a = await run(await journey(`ctx.log.info(JSON.stringify([new Date(0).getHours(), new Date(0).getTimezoneOffset(),
    new Date(2020, 0, 1).getTime(), Date.parse('2020-01-01T00:00'), String(new Date(0)), new Date(0).toLocaleString()]));`));
  t.same(JSON.parse(a.logs[0]!.message), [0, 0, 1577836800000, 1577836800000,
    'Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)', 'Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)']);
});

t.test('no host access: timers, network, modules, process and GC observers are undefined', async (t) => {
  const names = ['setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'fetch', 'require', 'process', 'module', 'console',
    'XMLHttpRequest', 'WebSocket', 'performance', 'WeakRef', 'FinalizationRegistry', 'std', 'os', '__headwater_host'];
  const a = await run(await journey(`ctx.log.info(JSON.stringify(${JSON.stringify(names)}.map((n) => typeof globalThis[n])));`));
  t.same(JSON.parse(a.logs[0]!.message), names.map(() => 'undefined'));
});

t.test('restart ends the activation with its event', async (t) => {
  const host = fakeHost();
  const a = await run(await journey(`await ctx.traits.set('round', 1); await ctx.restart({ event: 'again', properties: {} }); await ctx.traits.set('never', 1);`), [], host);
  t.equal(a.status, 'restart');
  if (a.status !== 'restart') return;
  t.same(a.event, { event: 'again', properties: {} });
  t.equal(a.position, 1);
  t.same(a.call, { name: 'restart', args: { event: { event: 'again', properties: {} } } });
  t.equal(host.calls.length, 1);
  const next = fakeHost();
  await run(await journey(`await ctx.traits.set('round', 2);`), [], next, { execution: { ...execution, runId: 'run_2' } });
  t.equal(next.calls[0]!.idempotencyKey, 'exe_1:run_2:0', 'the new run has its own keys');
  const bare = await run(await journey(`await ctx.restart();`));
  t.ok(bare.status === 'restart' && bare.event === undefined && bare.call.name === 'restart');
});

t.test('logs: levels, seq, non-string values, limits', async (t) => {
  const a = await run(await journey(`
    ctx.log.debug('d'); ctx.log.info('i', 1, { a: 1 }, [2]); ctx.log.warn('w'); ctx.log.error(new Error('e'));
    for (let i = 0; i < 20; i++) ctx.log.info('line ' + i);`), [], fakeHost(), { limits: { maxLogs: 10 } });
  t.equal(a.status, 'completed');
  t.same(a.logs.slice(0, 4), [
    { seq: 0, level: 'debug', message: 'd' }, { seq: 1, level: 'info', message: 'i 1 {"a":1} [2]' },
    { seq: 2, level: 'warn', message: 'w' }, { seq: 3, level: 'error', message: 'Error: e' },
  ]);
  t.equal(a.logs.length, 11);
  t.match(a.logs[10]!.message, /log limit of 10 lines/);
  t.same(a.logs.map((l) => l.seq), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
});

t.test('failure codes', async (t) => {
  t.test('an endless loop exhausts the fuel', async (t) => {
    const a = await run(await journey(`while (true) {}`), [], fakeHost(), { limits: { fuel: 20 } });
    failed(t, a, 'journey_fuel_exceeded');
    t.ok(a.stats.fuelUsed > 20);
    const inLoad = await run(await journey(`await ctx.profile.get();`, `let n = 0; for (;;) n++;`), [], fakeHost(), { limits: { fuel: 20 } });
    failed(t, inLoad, 'journey_fuel_exceeded');
  });
  t.test('a runaway loop of calls reaches the journal cap', async (t) => {
    const host = fakeHost();
    failed(t, await run(await journey(`for (;;) await ctx.traits.set('k', 1);`), [], host, { limits: { maxEntries: 50 } }), 'journey_fuel_exceeded', /50 journal entries/);
    t.equal(host.calls.length, 50);
  });
  t.test('a host call slower than the wall-clock budget times out', async (t) => {
    // The budget covers making the sandbox too (a failed activation disposes its own, so each run
    // loads a new one): on a loaded machine that alone can outlast a short budget, and the run then
    // times out before the call is made, which is right but does not exercise the abort. So the
    // budget doubles until the call is reached; each run must time out either way.
    for (let wallMs = 150; ; wallMs *= 2) {
      let aborted = false;
      // A call that only the abort settles.
      const slow = fakeHost((c) => new Promise((resolve) => {
        c.signal.addEventListener('abort', () => { aborted = true; resolve({ ok: true, value: null }); });
      }));
      const a = await run(await journey(`await ctx.profile.get();`), [], slow, { limits: { wallMs } });
      failed(t, a, 'journey_timeout', new RegExp(`${wallMs} ms`));
      t.equal(a.journal.length, 0);
      if (slow.calls.length === 0 && wallMs < 5000) continue;
      t.equal(slow.calls.length, 1, `the host call was made (budget ${wallMs} ms)`);
      t.ok(aborted, 'the host call was told to stop');
      break;
    }
  });
  t.test('a busy loop with ample fuel times out on the wall clock', async (t) => {
    failed(t, await run(await journey(`while (true) {}`), [], fakeHost(), { limits: { wallMs: 100, fuel: 1e9 } }), 'journey_timeout');
  });
  t.test('runaway allocation exceeds the memory cap; the engine recovers', async (t) => {
    // Filling memory is slow in QuickJS near its cap (collections run often): a small cap keeps this short.
    const code = await journey(`const a = []; for (;;) a.push([a.length, 2, 3, 4, 5, 6, 7, 8]);`);
    const modules = engine.modulesLoaded;
    failed(t, await run(code, [], fakeHost(), { limits: { memoryBytes: 4 * 1024 * 1024 } }), 'journey_memory_exceeded');
    const caught = await journey(`let a = []; try { for (;;) a.push([a.length, 2, 3, 4, 5, 6, 7, 8]); } catch (e) { a = null; ctx.log.info(String(e)); } await ctx.profile.get();`);
    const b = await run(caught, [], fakeHost(), { limits: { memoryBytes: 4 * 1024 * 1024 } });
    t.ok(b.status === 'completed' || (b.status === 'failed' && b.code === 'journey_memory_exceeded'), `caught inside: ${b.status}`);
    const ok = await run(await journey(`await ctx.profile.get();`));
    t.equal(ok.status, 'completed', 'the next activation runs');
    t.ok(engine.modulesLoaded > modules, 'on a fresh WebAssembly module');
  });
  t.test('recursion is stopped inside the sandbox; nesting deeper than the host stack is a memory failure', async (t) => {
    failed(t, await run(await journey(`function f() { return f() + 1; } f();`)), 'journey_error', /stack overflow/);
    const nested = await run(await journey(`eval('['.repeat(200000) + ']'.repeat(200000));`));
    t.equal(nested.status, 'failed');
    t.ok(nested.status === 'failed' && ['journey_memory_exceeded', 'journey_error'].includes(nested.code), nested.status === 'failed' ? nested.message : '');
    t.equal((await run(await journey(`await ctx.profile.get();`))).status, 'completed', 'the next activation runs');
  });
  t.test('an uncaught throw is journey_error with its message', async (t) => {
    failed(t, await run(await journey(`await ctx.traits.set('a', 1); throw new TypeError('boom at step 2');`)), 'journey_error', /^TypeError: boom at step 2$/);
    failed(t, await run(await journey(`throw 'plain';`)), 'journey_error', /^plain$/);
    failed(t, await run(await journey(``, `throw new Error('at load');`)), 'journey_error', /while loading: Error: at load/);
    failed(t, await run('this is not javascript'), 'journey_error', /while loading: SyntaxError/);
    failed(t, await run(''), 'journey_error', /does not default-export a journey/);
    failed(t, await run(await templateOf(`() => ({})`)), 'journey_error', /does not default-export a journey/);
    failed(t, await run(await journey(`await new Promise(() => {});`)), 'journey_error', /no ctx call settles/);
  });
});

// Each call must break the journal table in exactly one way; nothing reaches the host.
const INVALID: Array<[string, string, RegExp]> = [
  ['a 65-character template name', `ctx.email.send('x'.repeat(65), {})`, /template must be a string of 0 to 64 characters \(got 65/],
  ['a template name that is not a string', `ctx.email.send(5, {})`, /template must be a string/],
  ['non-object props', `ctx.email.send('t', 'props')`, /props must be an object/],
  ['array props', `ctx.email.send('t', [1])`, /props must be an object \(got an array\)/],
  ['non-object track properties', `ctx.events.track('e', 5)`, /properties must be an object \(got number\)/],
  ['an empty event name', `ctx.events.track('', {})`, /event must be a string of 1 to 200/],
  ['a 201-character event name', `ctx.events.track('e'.repeat(201), {})`, /event must be a string of 1 to 200/],
  ['an empty webhook destination', `ctx.webhook.send('', {})`, /destination must be a string of 1 to 100/],
  ['a null webhook payload', `ctx.webhook.send('crm', null)`, /payload must be an object \(got null\)/],
  ['an empty trait key', `ctx.traits.set('', 1)`, /key must be a string of 1 to 200/],
  ['a trait value left undefined', `ctx.traits.set('k')`, /value is required/],
  ['an empty trait key to unset', `ctx.traits.unset('')`, /key must be a string/],
  ['an empty profile id', `ctx.profiles.get('')`, /id must be a string of 1 to 200/],
  ['a bad duration unit', `ctx.sleep('5 minutes')`, /duration must be a duration/],
  ['a negative duration', `ctx.sleep(-1)`, /duration must be a duration/],
  ['a fractional duration', `ctx.sleep(1.5)`, /duration must be a duration/],
  ['a duration over ten years', `ctx.sleep('3651d')`, /duration must be a duration/],
  ['a missing duration', `ctx.sleep()`, /duration is required/],
  ['a wait without timeout', `ctx.waitForEvent('x')`, /timeout is required/],
  ['a wait for no names', `ctx.waitForEvent([], { timeout: '1h' })`, /array of 1 to 20 names/],
  ['a wait for an empty name', `ctx.waitForEvent(['a', ''], { timeout: '1h' })`, /event must be a string of 1 to 200/],
  ['a restart event that is not an object', `ctx.restart('again')`, /event must be an object/],
  ['a NUL character in props', `ctx.email.send('t', { a: 'x\\u0000y' })`, /\/props\/a must not contain the NUL/],
  ['a lone surrogate in a member name', `ctx.events.track('e', { ['\\ud800']: 1 })`, /member name must not contain a lone UTF-16 surrogate/],
  ['a cyclic payload', `(() => { const p = {}; p.self = p; return ctx.webhook.send('crm', p); })()`, /not JSON-serializable/],
  ['a BigInt value', `ctx.traits.set('k', 10n)`, /not JSON-serializable/],
  ['oversized arguments', `ctx.events.track('e', { big: 'x'.repeat(300000) })`, /exceed 262144 characters/],
];
t.test('arguments that break the journal table: journey_output_invalid, before any effect', async (t) => {
  for (const [what, expr, message] of INVALID) {
    const host = fakeHost();
    const a = await run(await journey(`await ctx.profile.get(); try { await ${expr}; } catch (e) { ctx.log.info('caught'); } await ctx.traits.set('after', 1);`), [], host);
    t.equal(a.status === 'failed' && a.code, 'journey_output_invalid', what);
    t.match(a.status === 'failed' ? a.message : '', message, `${what}: message`);
    t.match(a.status === 'failed' ? a.message : '', /^call 1: /, `${what}: names the position`);
    t.same(host.calls.map((c) => c.name), ['profile.get'], `${what}: no host call after it`);
    t.same(a.logs, [], `${what}: the journey cannot catch it`);
  }
});

t.test('valid edge arguments pass: a 64-character template, an empty template name, omitted props', async (t) => {
  const host = fakeHost();
  const a = await run(await journey(`await ctx.email.send('x'.repeat(64), {}); await ctx.email.send(''); await ctx.events.track('e');
    await ctx.webhook.send('crm'); await ctx.sleep(0);`), [], host);
  t.equal(a.status, 'waiting');
  t.same(host.calls.map((c) => c.args), [{ template: 'x'.repeat(64), props: {} }, { template: '', props: {} }, { event: 'e', properties: {} }, { destination: 'crm', payload: {} }]);
});

t.test('a host failure ends the activation with retry, keeping the entries recorded so far', async (t) => {
  const host = fakeHost((c) => { if (c.name === 'traits.set') throw new Error('database unavailable'); return defaultAnswer(c); });
  const a = await run(await journey(`await ctx.profile.get(); await ctx.traits.set('a', 1);`), [], host);
  t.equal(a.status, 'retry');
  t.ok(a.status === 'retry' && a.position === 1 && /database unavailable/.test(a.message));
  t.equal(a.journal.length, 1);
});

t.test('templates render in the sandbox', async (t) => {
  const code = await templateOf(`(props) => ({ subject: 'Hi ' + props.name, html: '<p>' + props.name + '</p>', text: 'Hi ' + props.name + ' ' + new Date().getUTCFullYear() })`);
  const r = await engine.render({ code, props: { name: 'Ada' }, now: Date.parse('2030-05-01T00:00:00Z') });
  t.same(r, { ok: true, subject: 'Hi Ada', html: '<p>Ada</p>', text: 'Hi Ada 2030' });

  const asyncRender = await templateOf(`async (props) => ({ subject: 's', html: '', text: String(props.n * 2) })`);
  t.same(await engine.render({ code: asyncRender, props: { n: 21 } }), { ok: true, subject: 's', html: '', text: '42' });

  const throwing = await templateOf(`(props) => { throw new Error('missing ' + props.field); }`);
  t.same(await engine.render({ code: throwing, props: { field: 'name' } }), { ok: false, code: 'journey_error', message: 'Error: missing name' });

  const cases: Array<[string, string, string]> = [
    ['a subject with a line break', `() => ({ subject: 'a\\r\\nBcc: x@y', html: '', text: '' })`, 'journey_output_invalid'],
    ['no html', `() => ({ subject: 's', text: '' })`, 'journey_output_invalid'],
    ['not an object', `() => 'text'`, 'journey_output_invalid'],
    ['a NUL in the body', `() => ({ subject: 's', html: '\\u0000', text: '' })`, 'journey_output_invalid'],
    ['an endless loop', `() => { for (;;) {} }`, 'journey_fuel_exceeded'],
    ['runaway allocation', `() => { const a = []; for (;;) a.push([a.length, 2, 3, 4, 5, 6, 7, 8]); }`, 'journey_memory_exceeded'],
  ];
  for (const [what, fn, code] of cases) {
    const res = await engine.render({ code: await templateOf(fn), props: {}, limits: { fuel: 500, memoryBytes: 4 * 1024 * 1024 } });
    t.equal(!res.ok && res.code, code, what);
  }
  const notTemplate = await engine.render({ code: await journey(''), props: {} });
  t.same(!notTemplate.ok && notTemplate.code, 'journey_error');
  t.same((await engine.render({ code, props: { name: 'again' } })).ok, true, 'the engine still renders');
});

t.test('engines run inside worker threads, one per thread, side by side', async (t) => {
  const code = await journey(`const me = await ctx.profile.get(); await ctx.traits.set('n', Math.random()); ctx.log.info(me.id + ' ' + Date.now());`);
  const src = `
    import { parentPort, workerData } from 'node:worker_threads';
    const { createEngine } = await import(workerData.mod);
    const engine = await createEngine();
    const host = { call: async (c) => ({ ok: true, value: c.name === 'profile.get' ? { id: workerData.who } : null }) };
    const a = await engine.activate({ code: workerData.code, execution: { id: 'x', runId: 'r', seed: 'same' }, event: workerData.event, journal: [], host });
    engine.close();
    parentPort.postMessage(a);`;
  const { Worker } = await import('node:worker_threads');
  const mod = new URL('../journeys/runtime/mod.js', import.meta.url).href;
  const runIn = (who: string) => new Promise<Activation>((resolve, reject) => {
    const w = new Worker(new URL(`data:text/javascript,${encodeURIComponent(src)}`), { workerData: { mod, code, event: EVENT, who } });
    w.once('message', resolve);
    w.once('error', reject);
  });
  const [a, b] = await Promise.all([runIn('w1'), runIn('w2')]);
  t.equal(a.status, 'completed');
  t.equal(b.status, 'completed');
  t.same(a.logs.map((l) => l.message), [`w1 ${Date.parse(EVENT.receivedAt)}`]);
  t.same(b.logs.map((l) => l.message), [`w2 ${Date.parse(EVENT.receivedAt)}`]);
  t.same(bare(a.journal[1]), bare(b.journal[1]), 'the same seed draws the same number in each thread');
});

t.test('activations overlapping on one engine keep their own sandboxes', async (t) => {
  const code = await journey(`const a = await ctx.profiles.get(ctx.event.profileId); ctx.log.info(a.id); await ctx.traits.set('seen', a.id);`);
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => { release = r; });
  const host = fakeHost(async (c) => { if (c.name === 'profiles.get') await gate; return defaultAnswer(c); });
  const runs = ['p1', 'p2', 'p3'].map((id) => engine.activate({ code, execution: { ...execution, id }, event: { ...EVENT, profileId: id }, journal: [], host }));
  t.ok(await until(() => host.calls.length === 3, 5000, 5), 'all three wait in a host call at once');
  release();
  const done = await Promise.all(runs);
  t.same(done.map((a) => a.status), ['completed', 'completed', 'completed']);
  t.same(done.map((a) => a.logs[0]?.message), ['p1', 'p2', 'p3']);
  t.same(host.calls.filter((c) => c.name === 'traits.set').map((c) => c.idempotencyKey).sort(), ['p1:run_1:1', 'p2:run_1:1', 'p3:run_1:1']);
});
