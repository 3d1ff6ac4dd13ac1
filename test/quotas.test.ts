// Per-org quotas (issue 23 item 10): for each quota the operator lowers it with PATCH
// /v1/orgs/{orgId}, the write past it answers 429 over_quota naming the limit (for executions: the
// execution is recorded failed with an over_quota error), another org is unaffected, and raising
// the limit lets the write through. Two concurrent creates at the limit do not both pass.
import t from 'tap';
import { call, createAppFixture, expectError, startServer, uid, type AppFixture } from './helpers/server.js';
import { bundle, journeyEntry, journeySource, manifest, push, sha, tarball, upload } from './helpers/project.js';
import { consenting, deployJourneys, fire, untilExecutions } from './helpers/journeys.js';

const s = await startServer();
t.teardown(() => s.close());

const setLimits = async (f: AppFixture, limits: Record<string, unknown>) => {
  const r = await call(s.url, 'PATCH', `/v1/orgs/${f.org.org.id}`, { token: s.operatorToken, body: { data: { limits } } });
  if (r.status !== 200) throw new Error(`PATCH limits: ${r.status} ${r.text}`);
};
const put = (f: AppFixture, bytes: Buffer) =>
  call(s.url, 'PUT', `/v1/artifacts/${sha(bytes)}?kind=bundle`, { token: f.admin, raw: bytes, contentType: 'application/octet-stream' });
const head = (f: AppFixture, bytes: Buffer) => call(s.url, 'HEAD', `/v1/artifacts/${sha(bytes)}`, { token: f.admin });
const webhook = (f: AppFixture) =>
  call(s.url, 'POST', '/v1/webhooks', { token: f.admin, body: { data: { name: uid('hook'), config: { url: 'https://crm.example.com/hooks' } } } });
const segment = (f: AppFixture) =>
  call(s.url, 'POST', '/v1/segments', { token: f.admin, body: { data: { name: uid('seg'), definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'exists' }] } } } });
const listCount = async (f: AppFixture, path: string) => (await call(s.url, 'GET', `${path}?limit=100`, { token: f.admin })).body.data.length;

t.test('artifactBytes: an upload past the stored bytes is 429 and stores nothing', async (t) => {
  const [f, other] = [await createAppFixture(s), await createAppFixture(s)];
  await setLimits(f, { artifactBytes: 100 });
  const a = Buffer.alloc(60, 'a');
  const b = Buffer.alloc(60, 'b');
  t.equal((await put(f, a)).status, 201, 'the first 60 bytes fit');
  expectError(t, await put(f, b), 429, 'over_quota', '60 more bytes past 100', 'artifactBytes');
  t.equal((await head(f, b)).status, 404, 'the refused upload stored nothing');
  t.equal((await put(f, a)).status, 200, 'uploading a stored digest again adds nothing and passes');
  t.equal((await put(other, b)).status, 201, 'another org is unaffected');
  await setLimits(f, { artifactBytes: 120 });
  t.equal((await put(f, b)).status, 201, 'after raising the limit');
  expectError(t, await put(f, Buffer.alloc(1, 'c')), 429, 'over_quota', 'exactly at the limit, one byte more');
  await setLimits(f, { artifactBytes: null });
  t.equal((await put(f, Buffer.alloc(1, 'c'))).status, 201, 'null is unlimited');
});

t.test('journeys: a push filing a new journey key past the limit is 429; new versions of existing ones pass', async (t) => {
  const [f, other] = [await createAppFixture(s), await createAppFixture(s)];
  const pushKeys = async (x: AppFixture, keys: string[], body?: string) => {
    const src = await upload(s, x.admin, await tarball({ 'headwater.json': '{}' }), 'source');
    const entries = [];
    for (const k of keys) entries.push(journeyEntry(k, await upload(s, x.admin, await bundle(journeySource(k, body)))));
    return push(s, x.admin, x.org.org.id, x.app.id, manifest({ journeys: entries, source: src }));
  };
  await setLimits(f, { journeys: 1 });
  t.equal((await pushKeys(f, ['one'])).status, 201, 'the first journey');
  expectError(t, await pushKeys(f, ['one', 'two']), 429, 'over_quota', 'a second journey key', 'journeys');
  const js = await call(s.url, 'GET', '/v1/journeys', { token: f.admin });
  t.same(js.body.data.map((j: any) => j.key), ['one'], 'the refused push created no journey');
  t.equal((await pushKeys(f, ['one'], 'await ctx.sleep("2s");')).status, 201, 'a new version of an existing journey at the limit');
  t.equal((await pushKeys(other, ['one', 'two'])).status, 201, 'another org is unaffected');
  await setLimits(f, { journeys: 2 });
  t.equal((await pushKeys(f, ['one', 'two'])).status, 201, 'after raising the limit');
});

for (const [name, create, path] of [['webhooks', webhook, '/v1/webhooks'], ['segments', segment, '/v1/segments']] as const) {
  t.test(`${name}: a create past the limit is 429; concurrent creates at the limit do not both pass`, async (t) => {
    const [f, other] = [await createAppFixture(s), await createAppFixture(s)];
    await setLimits(f, { [name]: 1 });
    t.equal((await create(f)).status, 201, 'the first');
    expectError(t, await create(f), 429, 'over_quota', 'the second', name);
    t.equal(await listCount(f, path), 1, 'nothing was created');
    t.equal((await create(other)).status, 201, 'another org is unaffected');
    await setLimits(f, { [name]: 3 });
    t.equal((await create(f)).status, 201, 'after raising the limit');
    const race = await Promise.all([create(f), create(f), create(f)]);
    t.same(race.map((r) => r.status).sort(), [201, 429, 429], `three at once with room for one: ${race.map((r) => r.text.slice(0, 80)).join(' | ')}`);
    t.equal(await listCount(f, path), 3, 'exactly the limit exists');
  });
}

t.test('runningExecutions: a start past the limit is recorded failed with over_quota', async (t) => {
  const [f, other] = [await createAppFixture(s), await createAppFixture(s)];
  const nap = [{ key: 'nap', body: `await ctx.sleep('1h');` }];
  await deployJourneys(s, f, nap);
  await deployJourneys(s, other, nap);
  await setLimits(f, { runningExecutions: 1 });
  const start = async (x: AppFixture) => {
    const user = uid('u');
    const p = await consenting(s, x, { userId: user });
    t.equal((await fire(s, x, user, 'nap_go')).status, 201);
    const [e] = await untilExecutions(s, x.admin, { journey: 'nap', profileId: p.id }, (l) => l.length === 1 && l[0].status !== 'running');
    return e;
  };
  t.equal((await start(f))?.status, 'waiting', 'the first execution runs (and sleeps)');
  const refused = await start(f);
  t.equal(refused?.status, 'failed', 'the second is refused');
  t.match(refused?.error, /^over_quota: .*runningExecutions/, 'its error names the limit');
  t.equal(refused?.journalEntries, 0, 'it never ran');
  t.equal((await start(other))?.status, 'waiting', 'another org is unaffected');
  t.equal((await start(other))?.status, 'waiting', 'another org is unaffected (second)');
  await setLimits(f, { runningExecutions: 2 });
  t.equal((await start(f))?.status, 'waiting', 'after raising the limit');
});
