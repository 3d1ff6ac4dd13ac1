// `headwater push` end to end against a real service (embedded, or PostgreSQL/NATS when set): a
// scaffolded project pushed, compiled, pushed unchanged, changed and pushed with the pipeline key.
import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { hw, initProject } from './helpers/cli.js';
import { startServer, createAppFixture, call, poll, type TestServer, type AppFixture } from './helpers/server.js';

interface Ctx { s: TestServer; f: AppFixture }

const pushJson = async (t: Test, c: Ctx, dir: string, token: string) => {
  const r = await hw(['push', dir, '--app', c.f.app.id, '--json'], { HEADWATER_URL: c.s.url, HEADWATER_TOKEN: token });
  t.equal(r.code, 0, `push exits 0 (${r.stderr})`);
  t.equal(r.stderr, '', 'nothing on stderr (not a terminal, --json)');
  return JSON.parse(r.stdout);
};

t.test('init then push; unchanged push files nothing; a change files one version', async (t) => {
  const s = await startServer();
  t.teardown(() => s.close());
  const f = await createAppFixture(s);
  const c = { s, f };
  const dir = await initProject(t);

  const first = await pushJson(t, c, dir, f.admin);
  t.match(first.id, /\w+/);
  t.equal(first.appId, f.app.id);
  t.equal(first.orgId, f.org.org.id);
  t.equal(first.manifest.protocol, 3);
  t.match(first.manifest.sdk, /^headwater\/sdk@\d+\.\d+\.\d+/);
  t.same(first.manifest.purposes, [{ key: 'onboarding', label: 'Onboarding messages', default: 'denied' }]);
  t.same(first.versions.map((v: any) => `${v.kind}:${v.key}`).sort(), ['journey:welcome', 'template:welcome-email']);
  t.equal(first.totalEntries, 2);
  const j = first.manifest.journeys[0];
  t.same(j.trigger, { event: 'signed_up' });
  t.same(j.enrollment, { cooldown: '1d' });
  t.same(j.spine.map((s: any) => s.name), ['profile.get', 'send.email', 'traits.set', 'waitForEvent', 'if', 'traits.unset']);
  t.same(j.spine[3], { name: 'waitForEvent', detail: 'activated', timeout: '1d' });
  const tpl = first.manifest.templates[0];
  t.same({ sendClass: tpl.sendClass, verifyLink: tpl.verifyLink, unsubscribeLink: tpl.unsubscribeLink }, { sendClass: 'transactional', verifyLink: false, unsubscribeLink: false });

  // Every artifact the manifest names is stored; the source archive is the project.
  for (const d of [j.bundle, tpl.bundle, first.manifest.source]) t.equal((await call(s.url, 'HEAD', `/v1/artifacts/${d}`, { token: f.admin })).status, 200, `artifact ${d.slice(0, 8)} stored`);
  const src = await fetch(`${s.url}/v1/pushes/${first.id}/source`, { headers: { authorization: `Bearer ${f.admin}` } });
  t.equal(src.status, 200);
  const tgz = Buffer.from(await src.arrayBuffer());
  t.equal(createHash('sha256').update(tgz).digest('hex'), first.manifest.source, 'the stored source is the digest');
  t.match(gunzipSync(tgz).toString('latin1'), 'journeys/welcome.ts');

  // The service compiles what the tool built.
  const compiled = await poll(() => call(s.url, 'GET', `/v1/pushes/${first.id}`, { token: f.admin }), (r) => r.body?.data?.compiledEntries === 2, 30_000, 200);
  t.same(compiled.body.data.versions.map((v: any) => [v.key, v.status, v.error]).sort(), [['welcome', 'ready', null], ['welcome-email', 'ready', null]], 'both versions compile');

  // Unchanged: nothing uploaded, no version filed.
  const again = await pushJson(t, c, dir, f.admin);
  t.same(again.versions, [], 'no version for an unchanged project');
  t.equal(again.totalEntries, 0);
  t.equal(again.manifest.source, first.manifest.source, 'same source digest');
  const human = await hw(['push', dir, '--app', f.app.id], { HEADWATER_URL: s.url, HEADWATER_TOKEN: f.admin });
  t.equal(human.code, 0);
  t.match(human.stdout, /: 0 new versions; 0 artifacts uploaded, 3 already stored/, 'nothing uploaded');
  const list = await call(s.url, 'GET', `/v1/pushes?appId=${f.app.id}`, { token: f.admin });
  t.equal(list.status, 200);
  t.same(list.body.data.map((p: any) => p.versions.length), [0, 0, 2], 'versions filed per push, newest first');

  // One journey changed, pushed with the pipeline key: exactly one new version.
  const file = join(dir, 'journeys/welcome.ts');
  writeFileSync(file, readFileSync(file, 'utf8').replace(`await ctx.sleep('1h');`, `await ctx.sleep('2h');`));
  const changed = await hw(['push', dir, '--app', f.app.id], { HEADWATER_URL: s.url, HEADWATER_TOKEN: f.org.pipelineKey });
  t.equal(changed.code, 0, changed.stderr);
  t.match(changed.stdout, /: 1 new version; 2 artifacts uploaded, 1 already stored/, 'the new bundle and source are uploaded');
  t.match(changed.stdout, /journey\s+welcome\s/);
  const after = await call(s.url, 'GET', `/v1/pushes?appId=${f.app.id}`, { token: f.admin });
  t.same(after.body.data[0].versions.map((v: any) => v.key), ['welcome'], 'exactly one new version: the changed journey');
  t.not(after.body.data[0].manifest.journeys[0].bundle, j.bundle);
  t.equal(after.body.data[0].manifest.templates[0].bundle, tpl.bundle, 'the template bundle is the same bytes');
});
