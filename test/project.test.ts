// The project tool as a user runs it (spawned through bin/): help, `headwater init`, and what
// `headwater push` refuses before any network call. The pushes themselves: project-push.test.ts.
import t from 'tap';
import { writeFileSync, readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort, hw, initProject, journeyFile, oneLineFailure, scaffold, type Run } from './helpers/cli.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'local project commands and refusals');

t.test('--help on every command exits 0', async (t) => {
  const all = [['--help'], ['serve', '--help'], ['worker', '--help'], ['org', 'create', '--help'], ['init', '--help'], ['push', '--help'], ['push', '-h']];
  const runs = await Promise.all(all.map((args) => hw(args)));
  all.forEach((args, i) => {
    t.equal(runs[i]!.code, 0, `${args.join(' ')} exits 0`);
    t.ok(runs[i]!.stdout.length > 40, `${args.join(' ')} prints help`);
  });
  t.match((await hw(['push', '--help'])).stdout, /--app APP_ID/);
});

t.test('init scaffolds a project and refuses a non-empty directory', async (t) => {
  const dir = await initProject(t);
  for (const f of ['headwater.json', 'tsconfig.json', 'journeys/welcome.ts', 'templates/welcome-email.ts', 'README.md']) t.ok(existsSync(join(dir, f)), f);
  t.same(JSON.parse(readFileSync(join(dir, 'headwater.json'), 'utf8')).purposes[0].default, 'denied');
  const welcome = readFileSync(join(dir, 'journeys/welcome.ts'), 'utf8');
  for (const call of ['ctx.profile.get', 'ctx.email.send', 'ctx.waitForEvent', 'ctx.sleep', 'ctx.traits.set', 'ctx.webhook.send']) t.match(welcome, call);

  oneLineFailure(t, await hw(['init', dir]), /not empty/, 'init into the project again');
  const file = join(dir, 'README.md');
  oneLineFailure(t, await hw(['init', file]), /not a directory/, 'init onto a file');
  oneLineFailure(t, await hw(['init']), /needs exactly one directory/, 'init without DIR');
  oneLineFailure(t, await hw(['init', dir, '--frobnicate']), /frobnicate/, 'init with an unknown option');
  t.same(readdirSync(join(dir, 'journeys')), ['welcome.ts'], 'the refused init wrote nothing');
});

t.test('push refuses locally, in one line, what cannot be pushed', async (t) => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const dir = await initProject(t);
  const push = (extra: string[] = [], d = dir) => hw(['push', d, '--app', 'app_x', '--url', url, ...extra], { HEADWATER_TOKEN: 'hwt_whatever' });

  oneLineFailure(t, await hw(['push', dir, '--token', 'x']), /--app APP_ID/, 'missing --app');
  oneLineFailure(t, await hw(['push', dir, '--app', 'app_x']), /credential/, 'missing token');
  oneLineFailure(t, await hw(['push', dir, '--app', 'app_x', '--token', 't', '--nope']), /nope/, 'unknown option');
  oneLineFailure(t, await push([], join(dir, 'missing')), /no such directory/, 'no such directory');
  oneLineFailure(t, await push([], join(dir, 'journeys')), /headwater\.json is missing/, 'not a project');
  oneLineFailure(t, await push(), /cannot reach the service at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/, 'service unreachable');

  const cases: Array<{ name: string; files: Record<string, string>; err: RegExp }> = [
    { name: 'a syntax error', files: { 'journeys/broken.ts': `import { journey } from 'headwater/sdk';\nexport default journey({ key: 'b', trigger: { event: 'e' }, purpose: 'onboarding' }, async (ctx) => {\n  await ctx.sleep('1s'\n});\n` }, err: /build failed: journeys\/broken\.ts:4:\d+: Expected/ },
    { name: 'an import that does not resolve', files: { 'journeys/dep.ts': `import x from 'left-pad-nowhere';\nconsole.log(x);\n${journeyFile('dep')}` }, err: /build failed: journeys\/dep\.ts:1:\d+: Could not resolve "left-pad-nowhere"/ },
    { name: 'a Node built-in (the sandbox has none)', files: { 'journeys/fs.ts': `import { readFileSync } from 'node:fs';\nconsole.log(readFileSync);\n${journeyFile('fs')}` }, err: /journeys\/fs\.ts:1:\d+: Could not resolve "node:fs"/ },
    { name: 'a file that does not export a journey', files: { 'journeys/none.ts': 'export default 42;\n' }, err: /journeys\/none\.ts: must default-export journey\(\.\.\.\) from 'headwater\/sdk'/ },
    { name: 'a template in the journeys folder', files: { 'journeys/tpl.ts': `import { template } from 'headwater/sdk';\nexport default template({ key: 't', sendClass: 'marketing', verifyLink: false }, () => ({ subject: '', html: '' }));\n` }, err: /journeys\/tpl\.ts: must default-export journey/ },
    { name: 'a throw while loading', files: { 'templates/boom.js': `throw new Error('boom at load');\n` }, err: /templates\/boom\.js: evaluating it failed: boom at load/ },
    { name: 'a 65-character key', files: { 'journeys/long.ts': journeyFile('k'.repeat(65)) }, err: /journeys\/long\.ts: key must NOT have more than 64 characters/ },
    { name: 'a 501-character description', files: { 'journeys/desc.ts': journeyFile('desc').replace(`purpose: 'onboarding'`, `purpose: 'onboarding', description: '${'d'.repeat(501)}'`) }, err: /journeys\/desc\.ts: description must NOT have more than 500 characters/ },
    { name: '21 tags', files: { 'journeys/tags.ts': journeyFile('tags').replace(`purpose: 'onboarding'`, `purpose: 'onboarding', tags: ${JSON.stringify(Array.from({ length: 21 }, (_, i) => `t${i}`))}`) }, err: /journeys\/tags\.ts: tags must NOT have more than 20 items/ },
    { name: 'a bad sendClass', files: { 'templates/bad.ts': `import { template } from 'headwater/sdk';\nexport default template({ key: 'bad', sendClass: 'bulk' as any, verifyLink: false }, () => ({ subject: '', html: '' }));\n` }, err: /templates\/bad\.ts: sendClass must be equal to one of the allowed values/ },
    { name: 'a purpose label over 50 characters', files: { 'headwater.json': JSON.stringify({ purposes: [{ key: 'onboarding', label: 'l'.repeat(51), default: 'denied' }] }) }, err: /headwater\.json: purposes\[0\]\.label must NOT have more than 50 characters/ },
    { name: 'an undeclared purpose', files: { 'journeys/p.ts': journeyFile('p', undefined, 'marketing') }, err: /journeys\/p\.ts: purpose "marketing" is not declared in headwater\.json/ },
    { name: 'two journeys with one key', files: { 'journeys/again.ts': journeyFile('welcome') }, err: /journeys\/welcome\.ts: journey key "welcome" is also the key of journeys\/again\.ts/ },
    { name: 'headwater.json that is not JSON', files: { 'headwater.json': '{ purposes: ' }, err: /headwater\.json: / },
  ];
  // Four at a time: each is a process of its own.
  const runs: Run[] = [];
  for (let i = 0; i < cases.length; i += 4) {
    runs.push(...await Promise.all(cases.slice(i, i + 4).map((c, j) => {
      const d = scaffold(join(dir, '..', `case-${i + j}`));
      for (const [rel, text] of Object.entries(c.files)) writeFileSync(join(d, rel), text);
      return push([], d);
    })));
  }
  cases.forEach((c, i) => oneLineFailure(t, runs[i]!, c.err, c.name));

  // 101 journeys: over the manifest limit of 100.
  const many = scaffold(join(dir, '..', 'many'));
  for (let i = 0; i < 100; i++) writeFileSync(join(many, 'journeys', `j${String(i).padStart(3, '0')}.ts`), journeyFile(`j${i}`));
  oneLineFailure(t, await push([], many), /project: journeys must NOT have more than 100 items/, '101 journeys');
});

