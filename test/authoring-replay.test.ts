// The replay check through the command line against a real service: `headwater replay` replays the
// journals of a journey's running executions against a changed local project (a compatible change
// passes; a reorder or a changed wait fails naming the position and both calls), `push --check`
// refuses the reorder and `--force` pushes it saying how many running executions keep the old
// version. The journals route is scoped by org and credential.
import t from 'tap';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hw } from './helpers/cli.js';
import { call, createAppFixture, createOrg, expectError, poll, startServer } from './helpers/server.js';
import { consenting, fire, untilExecutions } from './helpers/journeys.js';

const s = await startServer();
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;
const env = { HEADWATER_URL: s.url, HEADWATER_TOKEN: fx.org.pipelineKey };

const STEPS = {
  set: `await ctx.traits.set('stage', 'one');`,
  track: `await ctx.events.track('flow_step', { n: 1 });`,
  wait: `const done = await ctx.waitForEvent('flow_done', { timeout: '1d' });`,
  after: `await ctx.traits.set('stage', done ? 'done' : 'late');`,
};
const source = (body: string) => `import { journey } from 'headwater/sdk';
export default journey({ key: 'flow', trigger: { event: 'flow_go' }, purpose: 'onboarding' }, async (ctx) => {
  ${body}
});
`;
const original = source([STEPS.set, STEPS.track, STEPS.wait, STEPS.after].join('\n  '));

const parent = mkdtempSync(join(tmpdir(), 'hw-replay-'));
t.teardown(() => rmSync(parent, { recursive: true, force: true }));
const dir = join(parent, 'p');
mkdirSync(join(dir, 'journeys'), { recursive: true });
writeFileSync(join(dir, 'headwater.json'), JSON.stringify({ purposes: [{ key: 'onboarding', label: 'Onboarding', default: 'denied' }] }));
const write = (code: string) => writeFileSync(join(dir, 'journeys/flow.ts'), code);

const pushes = async () => (await call(s.url, 'GET', `/v1/pushes?appId=${fx.app.id}`, { token: admin })).body.data as any[];

// Deploy the original through the tool, enable it, and park two executions on their wait.
write(original);
const first = await hw(['push', dir, '--app', fx.app.id, '--json'], env);
if (first.code !== 0) throw new Error(`push: ${first.stderr}`);
const pushId = JSON.parse(first.stdout).id;
await poll(() => call(s.url, 'GET', `/v1/pushes/${pushId}`, { token: admin }), (r) => r.body?.data?.compiledEntries === 1, 60_000, 200);
const enabled = await call(s.url, 'PATCH', '/v1/journeys/flow', { token: admin, body: { data: { enabled: true } } });
if (enabled.status !== 200) throw new Error(`enable: ${enabled.text}`);
for (const userId of ['replay-a', 'replay-b']) {
  await consenting(s, fx, { userId });
  await fire(s, fx, userId, 'flow_go');
}
await untilExecutions(s, admin, { journey: 'flow' }, (l) => l.length === 2 && l.every((x) => x.status === 'waiting'));

t.test('the journals route answers each execution\'s trigger event, run, journal and pending wait', async (t) => {
  const r = await call(s.url, 'GET', '/v1/journeys/flow/journals?limit=5', { token: fx.org.pipelineKey });
  t.equal(r.status, 200, r.status === 200 ? 'answered' : r.text);
  const d = r.body.data;
  t.same({ key: d.key, enabled: d.enabled, active: d.active, n: d.executions.length }, { key: 'flow', enabled: true, active: 2, n: 2 });
  t.equal(d.bundle, JSON.parse(first.stdout).manifest.journeys[0].bundle, 'the newest ready bundle');
  const x = d.executions[0];
  t.equal(x.event.event, 'flow_go');
  t.same(x.journal.map((e: any) => [e.at, e.call.name]), [[0, 'traits.set'], [1, 'events.track']]);
  t.same(x.pending, { at: 2, call: { name: 'waitForEvent', args: { event: 'flow_done', timeout: '1d' } } });
  t.equal((await call(s.url, 'GET', '/v1/journeys/flow/journals?limit=1', { token: admin })).body.data.executions.length, 1, 'limit');

  expectError(t, await call(s.url, 'GET', '/v1/journeys/nope/journals', { token: admin }), 404, 'not_found', 'unknown journey');
  const other = await createOrg(s);
  expectError(t, await call(s.url, 'GET', '/v1/journeys/flow/journals', { token: other.sessions.admin }), 404, 'not_found', 'another org\'s journey');
  expectError(t, await call(s.url, 'GET', '/v1/journeys/flow/journals', { token: fx.org.deployKey }), 403, 'deploy_key_scope', 'deploy key');
  expectError(t, await call(s.url, 'GET', '/v1/journeys/flow/journals', { token: fx.key }), 401, 'invalid_key', 'ingestion key');
  expectError(t, await call(s.url, 'GET', '/v1/journeys/flow/journals?limit=0', { token: admin }), 422, 'validation_failed', 'limit 0');
});

const CASES = [
  {
    name: 'a compatible change (code after the pending wait, a log line) replays',
    body: [STEPS.set, `ctx.log.info('new line');`, STEPS.track, STEPS.wait, `await ctx.traits.set('stage', done ? 'finished' : 'late');`].join('\n  '),
    code: 0, out: /flow \(journeys\/flow\.ts\): 2 executions replayed, 2 compatible, 0 would not replay/,
  },
  {
    name: 'two reordered calls fail at position 0, naming both calls',
    body: [STEPS.track, STEPS.set, STEPS.wait, STEPS.after].join('\n  '),
    code: 1,
    out: /nondeterministic at call 0: the journal records traits\.set \{"key":"stage","value":"one"\}, the code now calls events\.track \{"event":"flow_step","properties":\{"n":1\}\}/,
  },
  {
    name: 'a changed pending wait fails at its position',
    body: [STEPS.set, STEPS.track, `const done = await ctx.waitForEvent('flow_finished', { timeout: '1d' });`, STEPS.after].join('\n  '),
    code: 1,
    out: /nondeterministic at call 2: the journal records waitForEvent \{"event":"flow_done","timeout":"1d"\}, the code now calls waitForEvent \{"event":"flow_finished","timeout":"1d"\}/,
  },
  {
    name: 'a removed call fails where the journal goes on',
    body: [STEPS.set, STEPS.wait, STEPS.after].join('\n  '),
    code: 1,
    out: /at call 1: the journal records events\.track .*, the code now calls waitForEvent/,
  },
];

/** A copy of the project with the journey's code replaced, so cases run side by side. */
let copies = 0;
const variant = (body: string) => {
  const d = join(parent, `v${++copies}`);
  mkdirSync(join(d, 'journeys'), { recursive: true });
  writeFileSync(join(d, 'headwater.json'), JSON.stringify({ purposes: [{ key: 'onboarding', label: 'Onboarding', default: 'denied' }] }));
  writeFileSync(join(d, 'journeys/flow.ts'), source(body));
  return d;
};

t.test('replay: the table of changes, each run as a user runs it', async (t) => {
  const runs = await Promise.all(CASES.map((c) => hw(['replay', variant(c.body), '--journey', 'flow'], env)));
  CASES.forEach((c, i) => {
    const r = runs[i]!;
    t.equal(r.code, c.code, `${c.name}: exit ${c.code} (${r.stderr})`);
    t.match(r.stdout, c.out, c.name);
    if (c.code === 1) {
      t.match(r.stdout, /2 executions replayed, 0 compatible, 2 would not replay/, `${c.name}: summary`);
      t.equal(r.stdout.match(/nondeterministic at call/g)?.length, 2, `${c.name}: both executions listed`);
    }
    t.equal(r.stderr, '', `${c.name}: no progress when stderr is not a terminal`);
  });
});

t.test('replay refuses bad input with one line', async (t) => {
  write(original);
  const cases: Array<[string[], Record<string, string>, RegExp, number]> = [
    [['replay', dir, '--last', '0'], env, /needs --journey KEY/, 2],
    [['replay', dir, '--journey', 'ghost'], env, /the project has no journey "ghost" \(its journeys: flow\)/, 1],
    [['replay', dir, '--journey', 'flow'], { ...env, HEADWATER_TOKEN: fx.key }, /refused the credential/, 1],
  ];
  const runs = await Promise.all(cases.map(([args, e]) => hw(args, e)));
  for (const [i, [args, , pattern, code]] of cases.entries()) {
    const r = runs[i]!;
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`);
    t.match(r.stderr, pattern);
    t.equal(r.stderr.trimEnd().split('\n').length, 1, 'one line');
    t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});

t.test('push --check refuses the reorder; --force pushes it and counts running executions', async (t) => {
  write(source([STEPS.track, STEPS.set, STEPS.wait, STEPS.after].join('\n  ')));
  const before = (await pushes()).length;
  const refused = await hw(['push', dir, '--app', fx.app.id, '--check'], env);
  t.equal(refused.code, 1, 'refused');
  t.match(refused.stderr, /check flow: 2 executions replayed, 2 would not replay/);
  t.match(refused.stderr, /flow: exe\S+ \(waiting, release \S+\): nondeterministic at call 0: the journal records traits\.set/);
  t.match(refused.stderr, /headwater: push refused: the changed code of flow \(2 executions\) would not replay recorded journals; fix it, or push anyway with --force/);
  t.equal(refused.stdout, '');
  t.equal((await pushes()).length, before, 'nothing pushed');

  const forced = await hw(['push', dir, '--app', fx.app.id, '--check', '--force', '--json'], env);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stderr, /push --force: pushing anyway; 2 running executions of flow keep the old version/);
  const p = JSON.parse(forced.stdout);
  t.same(p.versions.map((v: any) => v.key), ['flow'], 'the changed journey is pushed');
  t.equal((await pushes()).length, before + 1);
});

t.test('push --check passes a compatible change and an unchanged project', async (t) => {
  // The service's newest ready version is now the reordered one once it compiles; executions still run the original.
  const latest = (await pushes())[0];
  await poll(() => call(s.url, 'GET', `/v1/pushes/${latest.id}`, { token: admin }), (r) => r.body?.data?.compiledEntries === 1, 60_000, 200);
  write(source([STEPS.set, STEPS.track, STEPS.wait, `await ctx.traits.set('stage', 'compatible');`].join('\n  ')));
  const ok = await hw(['push', dir, '--app', fx.app.id, '--check'], env);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stderr, /check flow: 2 executions replayed, 0 would not replay/);
  t.match(ok.stdout, /: 1 new version;/);
  const latest2 = (await pushes())[0];
  await poll(() => call(s.url, 'GET', `/v1/pushes/${latest2.id}`, { token: admin }), (r) => r.body?.data?.compiledEntries === 1, 60_000, 200);
  const same = await hw(['push', dir, '--app', fx.app.id, '--check'], env);
  t.equal(same.code, 0, same.stderr);
  t.notMatch(same.stderr, /check flow/, 'unchanged code is not replayed');
  t.match(same.stdout, /: 0 new versions;/);
});
