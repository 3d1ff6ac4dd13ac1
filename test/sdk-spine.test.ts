// The journey SDK's runtime values and types, the spine (static outline of a journey's ctx calls)
// read from source, and the deterministic source archive.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, utimesSync, chmodSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { journey, template, type JourneyContext } from '../sdk/index.js';
import { extractSpine, stripTypes, packSource } from '../cli/project/index.js';

t.test('journey() and template() return the shape the service compiles', async (t) => {
  const handler = async (ctx: JourneyContext) => { await ctx.sleep('2s'); };
  const j = journey({ key: 'welcome', trigger: { event: 'signed_up' }, purpose: 'onboarding' }, handler);
  t.same(Object.keys(j).sort(), ['handler', 'key', 'kind', 'options']);
  t.equal(j.kind, 'journey');
  t.equal(j.key, 'welcome');
  t.equal(j.handler, handler);
  const render = (p: { name: string }) => ({ subject: `hi ${p.name}`, html: '<p>hi</p>' });
  const tp = template<{ name: string }>({ key: 'hello', sendClass: 'marketing', verifyLink: true }, render);
  t.same(Object.keys(tp).sort(), ['key', 'kind', 'options', 'render']);
  t.equal(tp.kind, 'template');
  t.equal(tp.render({ name: 'Ada' }).subject, 'hi Ada');
  // Wrong values at run time (plain JS callers) fail at definition, with the key named.
  t.throws(() => journey({ key: '' } as never, handler), /options.key/);
  t.throws(() => journey({ key: 'k', trigger: { event: 'e' }, purpose: 'p' }, 'nope' as never), /journey\("k"\)/);
  t.throws(() => template({ key: 'k' } as never, undefined as never), /template\("k"\)/);
});

t.test('the SDK types refuse what the service would refuse (checked when the tests compile)', async (t) => {
  const base = { key: 'k', purpose: 'p' };
  journey({ ...base, trigger: { segment: 'seg_1', on: 'entered' }, enrollment: { cooldown: 60_000 }, tags: ['a'] }, async (ctx) => {
    const me = await ctx.profile.get();
    const ev = await ctx.waitForEvent(['a', 'b'], { timeout: '1h' });
    if (ev) await ctx.traits.set('last', ev.event);
    await ctx.webhook.send('crm', { id: me.id, consent: me.consent.onboarding });
    ctx.log.warn(ctx.event.properties.plan as string);
  });
  // @ts-expect-error a segment trigger moves on 'entered' or 'exited' only
  journey({ ...base, trigger: { segment: 'seg_1', on: 'left' } }, async () => {});
  journey({ ...base, trigger: { event: 'e' } }, async (ctx) => {
    // @ts-expect-error durations are '500ms' '2s' '5m' '1h' '3d' or milliseconds
    await ctx.sleep('2 weeks');
    // @ts-expect-error waitForEvent needs a timeout
    await ctx.waitForEvent('x');
  });
  // @ts-expect-error sendClass is marketing or transactional
  template({ key: 't', sendClass: 'bulk', verifyLink: false }, () => ({ subject: '', html: '' }));
  t.pass('compiled');
});

t.test('the package exports headwater/sdk', async (t) => {
  const name = 'headwater/sdk'; // a variable: resolved at run time through package.json "exports"
  const sdk = (await import(name)) as Record<string, unknown>;
  t.same(Object.keys(sdk).sort(), ['escapeHtml', 'journey', 'template']);
});

const J = (body: string, head = 'async (ctx) =>') => `import { journey } from 'headwater/sdk';
export default journey({ key: 'k', trigger: { event: 'e' }, purpose: 'p' }, ${head} {
${body}
});`;

const spineCases: Array<{ name: string; src: string; want: unknown }> = [
  {
    name: 'a sequence, every call kind, with details',
    src: J(`const me = await ctx.profile.get();
      const other = await ctx.profiles.get(me.traits.friend);
      await ctx.sleep('2s'); await ctx.sleep(500);
      await ctx.waitForEvent(['activated', 'paid'], { timeout: '1h' });
      await ctx.traits.set('stage', 'x'); await ctx.traits.unset('temp');
      await ctx.events.track('welcomed', { step: 1 });
      await ctx.email.send(\`welcome-email\`, { name: me.traits.name });
      await ctx.webhook.send('crm', {});
      ctx.log.info('not a step');
      await ctx.restart();`),
    want: [
      { name: 'profile.get' }, { name: 'profiles.get', detail: 'me.traits.friend' },
      { name: 'sleep', detail: '2s' }, { name: 'sleep', detail: '500' },
      { name: 'waitForEvent', detail: 'activated, paid', timeout: '1h' },
      { name: 'traits.set', detail: 'stage' }, { name: 'traits.unset', detail: 'temp' },
      { name: 'events.track', detail: 'welcomed' }, { name: 'send.email', detail: 'welcome-email' },
      { name: 'send.webhook', detail: 'crm' }, { name: 'restart' },
    ],
  },
  {
    name: 'if / else, an if without calls is left out',
    src: J(`const ev = await ctx.waitForEvent('activated', { timeout: '1d' });
      if (ev) { await ctx.email.send('thanks'); } else { await ctx.sleep('1h'); await ctx.email.send('nudge'); }
      if (ev) { console.log('no ctx call here'); }
      if (!ev) await ctx.traits.set('cold', true);`),
    want: [
      { name: 'waitForEvent', detail: 'activated', timeout: '1d' },
      { name: 'if', detail: 'ev', steps: [{ name: 'send.email', detail: 'thanks' }], otherwise: [{ name: 'sleep', detail: '1h' }, { name: 'send.email', detail: 'nudge' }] },
      { name: 'if', detail: '!ev', steps: [{ name: 'traits.set', detail: 'cold' }] },
    ],
  },
  {
    name: 'else if chains nest in otherwise; ternaries and && are ifs too',
    src: J(`const p = await ctx.profile.get();
      if (p.traits.plan === 'pro') await ctx.email.send('pro');
      else if (p.traits.plan === 'team') await ctx.email.send('team');
      else await ctx.email.send('free');
      await (p.anonymous ? ctx.sleep('1d') : ctx.email.send('known'));
      p.traits.vip && await ctx.webhook.send('vip');`),
    want: [
      { name: 'profile.get' },
      { name: 'if', detail: 'p.traits.plan === "pro"', steps: [{ name: 'send.email', detail: 'pro' }], otherwise: [
        { name: 'if', detail: 'p.traits.plan === "team"', steps: [{ name: 'send.email', detail: 'team' }], otherwise: [{ name: 'send.email', detail: 'free' }] },
      ] },
      { name: 'if', detail: 'p.anonymous', steps: [{ name: 'sleep', detail: '1d' }], otherwise: [{ name: 'send.email', detail: 'known' }] },
      { name: 'if', detail: 'p.traits.vip', steps: [{ name: 'send.webhook', detail: 'vip' }] },
    ],
  },
  {
    name: 'for, for-of, while, do-while and array callbacks are loops',
    src: J(`for (let i = 0; i < 3; i++) { await ctx.sleep('1d'); await ctx.email.send('reminder'); }
      for (const f of ['a', 'b']) await ctx.traits.unset(f);
      while (!(await ctx.waitForEvent('paid', { timeout: '1d' }))) await ctx.email.send('dun');
      do { await ctx.sleep('5m'); } while (false);
      await Promise.all(['x', 'y'].map((k) => ctx.events.track(k)));`),
    want: [
      { name: 'loop', detail: 'for (let i = 0; i < 3; i++)', steps: [{ name: 'sleep', detail: '1d' }, { name: 'send.email', detail: 'reminder' }] },
      { name: 'loop', detail: 'for (const f of ["a", "b"])', steps: [{ name: 'traits.unset', detail: 'f' }] },
      { name: 'waitForEvent', detail: 'paid', timeout: '1d' },
      { name: 'loop', detail: 'while (!await ctx.waitForEvent("paid", { timeout: "1d" }))', steps: [{ name: 'send.email', detail: 'dun' }] },
      { name: 'loop', detail: 'do … while (false)', steps: [{ name: 'sleep', detail: '5m' }] },
      { name: 'loop', detail: '["x", "y"].map(…)', steps: [{ name: 'events.track', detail: 'k' }] },
    ],
  },
  {
    name: 'nested: a loop in a branch in a loop, an early return is an end',
    src: J(`for (const week of [1, 2]) {
        const ev = await ctx.waitForEvent('opened', { timeout: '7d' });
        if (!ev) {
          for (let i = 0; i < week; i++) await ctx.email.send('digest');
        } else {
          await ctx.traits.set('engaged', true);
          return;
        }
      }
      await ctx.events.track('lapsed');`),
    want: [
      { name: 'loop', detail: 'for (const week of [1, 2])', steps: [
        { name: 'waitForEvent', detail: 'opened', timeout: '7d' },
        { name: 'if', detail: '!ev',
          steps: [{ name: 'loop', detail: 'for (let i = 0; i < week; i++)', steps: [{ name: 'send.email', detail: 'digest' }] }],
          otherwise: [{ name: 'traits.set', detail: 'engaged' }, { name: 'end' }] },
      ] },
      { name: 'events.track', detail: 'lapsed' },
    ],
  },
  {
    name: 'switch is an if chain; try/catch; a return inside a callback is not an end',
    src: J(`switch (ctx.event.properties.plan) {
        case 'pro': await ctx.email.send('pro'); break;
        case 'team': await ctx.email.send('team'); break;
        default: await ctx.email.send('free');
      }
      try { await ctx.webhook.send('crm'); } catch (e) { await ctx.traits.set('crm_failed', true); }
      const send = async () => { return ctx.sleep('1s'); };
      await send();`),
    want: [
      { name: 'if', detail: 'ctx.event.properties.plan === "pro"', steps: [{ name: 'send.email', detail: 'pro' }], otherwise: [
        { name: 'if', detail: 'ctx.event.properties.plan === "team"', steps: [{ name: 'send.email', detail: 'team' }], otherwise: [{ name: 'send.email', detail: 'free' }] },
      ] },
      { name: 'send.webhook', detail: 'crm' },
      { name: 'if', detail: 'catch (e)', steps: [{ name: 'traits.set', detail: 'crm_failed' }] },
      { name: 'sleep', detail: '1s' },
    ],
  },
  {
    name: 'a destructured ctx and TypeScript syntax',
    src: J(`const id: string = (event.properties as { id: string }).id;
      const { set } = traits;
      await sleep(1000 as number);
      await email.send<any>('hi');
      await set('seen', id);`, 'async ({ event, sleep, email, traits }: any): Promise<void> =>'),
    want: [{ name: 'sleep', detail: '1000' }, { name: 'send.email', detail: 'hi' }, { name: 'traits.set', detail: 'seen' }],
  },
  {
    name: 'a handler declared apart, exported through a variable',
    src: `import { journey as j } from 'headwater/sdk';
      async function run(c: any) { await c.sleep('3d'); }
      const def = j({ key: 'k', trigger: { event: 'e' }, purpose: 'p' }, run);
      export default def;`,
    want: [{ name: 'sleep', detail: '3d' }],
  },
  {
    name: 'long details are clipped to the manifest limits',
    src: J(`await ctx.email.send('${'x'.repeat(300)}'); await ctx.waitForEvent('e', { timeout: '${'9'.repeat(80)}' });`),
    want: [{ name: 'send.email', detail: 'x'.repeat(199) + '…' }, { name: 'waitForEvent', detail: 'e', timeout: '9'.repeat(49) + '…' }],
  },
  { name: 'no journey default export: no spine', src: `export const x = 1;`, want: [] },
];

// Details are the expression as printed after TypeScript is stripped (double quotes, one line).
t.test('spine extraction', async (t) => {
  for (const c of spineCases) {
    t.same(extractSpine(await stripTypes(c.src, 'journeys/x.ts')), c.want, c.name);
  }
});

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hw-pack-'));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

t.test('the source archive is deterministic and skips node_modules and dot entries', async (t) => {
  const files = { 'headwater.json': '{"purposes":[]}', 'journeys/a.ts': 'export {}', 'journeys/b.ts': '//b', 'lib/util.ts': 'export const x = 1;' };
  const one = project(files);
  // The same files written in another order, with other mtimes and modes, plus things that are skipped.
  const reversed = Object.fromEntries(Object.entries(files).reverse());
  const two = project({ ...reversed, 'node_modules/dep/index.js': 'x', '.env': 'SECRET=1', '.git/HEAD': 'ref', 'journeys/.draft.ts': 'x' });
  t.teardown(() => { rmSync(one, { recursive: true, force: true }); rmSync(two, { recursive: true, force: true }); });
  utimesSync(join(two, 'journeys/a.ts'), new Date('2001-01-01'), new Date('2001-01-01'));
  chmodSync(join(two, 'lib/util.ts'), 0o755);
  symlinkSync(join(two, 'lib/util.ts'), join(two, 'lib/link.ts'));

  const a = await packSource(one);
  const a2 = await packSource(one);
  const b = await packSource(two);
  t.equal(a.digest, a2.digest, 'the same directory twice');
  t.equal(b.digest, a.digest, 'same files, other mtimes, modes, order and skipped entries');
  t.same(b.files, ['headwater.json', 'journeys/a.ts', 'journeys/b.ts', 'lib/util.ts']);
  t.match(a.digest, /^[0-9a-f]{64}$/);

  // A readable ustar archive: names in order, fixed mode and mtime, no owner.
  const tar = gunzipSync(a.bytes);
  const names: string[] = [];
  for (let off = 0; off + 512 <= tar.length && tar[off] !== 0; ) {
    const h = tar.subarray(off, off + 512);
    const field = (s: number, n: number) => h.subarray(s, s + n).toString('latin1').replace(/\0.*$/s, '');
    names.push(field(0, 100));
    t.equal(parseInt(field(100, 8), 8), 0o644, `${field(0, 100)} mode`);
    t.equal(parseInt(field(136, 12), 8), 0, 'mtime 0');
    t.equal(field(265, 32), '', 'no owner name');
    const size = parseInt(field(124, 12), 8);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  t.same(names, a.files);

  writeFileSync(join(two, 'journeys/b.ts'), '//b changed');
  t.not((await packSource(two)).digest, a.digest, 'a changed file changes the digest');
});
