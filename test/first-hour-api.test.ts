// The reads a first-time user reaches for: an app answered with its default source, the profile
// list (newest first, paginated, searched with q), and each journey's latest version status.
import t from 'tap';
import { call, createAppFixture, createOrg, expectError, startServer, uid, type TestServer } from './helpers/server.js';
import { deployJourneys } from './helpers/journeys.js';

let s: TestServer;
t.before(async () => { s = await startServer(); });
t.teardown(() => s?.close());

t.test('POST /v1/apps answers its default source', async (t) => {
  const org = await createOrg(s);
  const r = await call(s.url, 'POST', '/v1/apps', { token: org.sessions.admin, body: { data: { name: 'web' } } });
  t.equal(r.status, 201);
  t.equal(r.body.data.sources.length, 1, 'one default source');
  const [src] = r.body.data.sources;
  t.same({ kind: src.kind, name: src.name }, { kind: 'api', name: 'api' });
  const listed = await call(s.url, 'GET', `/v1/apps/${r.body.data.id}/sources`, { token: org.sessions.admin });
  t.equal(listed.body.data[0].id, src.id, 'the same source the app lists');
  const read = await call(s.url, 'GET', `/v1/apps/${r.body.data.id}`, { token: org.sessions.admin });
  t.notOk('sources' in read.body.data, 'only the creating answer carries sources');
});

t.test('GET /v1/profiles lists, pages and searches', async (t) => {
  const fx = await createAppFixture(s);
  const tag = uid('q').replace('-', '');
  const people = [
    { userId: uid('u'), traits: { name: `Ada ${tag}`, plan: 'pro' } },
    { userId: uid('u'), email: `grace.${tag}@example.com`, traits: { name: 'Grace', plan: 'free' } },
    { userId: uid('u'), traits: { name: 'Linus', score: 7654321, note: '50% off_sale' } },
  ];
  const ids: string[] = [];
  for (const p of people) {
    const identifiers: Record<string, string> = { userId: p.userId };
    if (p.email) identifiers.email = p.email;
    const r = await call(s.url, 'POST', '/v1/identify', { token: fx.key, body: { data: { sourceId: fx.source.id, identifiers, traits: p.traits } } });
    t.equal(r.status, 200, r.text);
    ids.push(r.body.data.id);
  }
  const list = (q: string, token = fx.admin) => call(s.url, 'GET', `/v1/profiles${q}`, { token });

  const all = await list('');
  t.equal(all.status, 200);
  t.same(all.body.data.map((p: any) => p.id), [...ids].reverse(), 'newest first');
  t.ok(all.body.data[0].identifiers.length >= 1, 'profiles carry their identifiers');

  const p1 = await list('?limit=2');
  t.same(p1.body.data.map((p: any) => p.id), [ids[2], ids[1]]);
  t.equal(p1.body.meta.hasMore, true);
  const p2 = await list(`?limit=2&cursor=${p1.body.meta.nextCursor}`);
  t.same(p2.body.data.map((p: any) => p.id), [ids[0]]);
  t.equal(p2.body.meta.hasMore, false);

  const cases: Array<[string, string[]]> = [
    [`?q=${tag.toUpperCase()}`, [ids[1]!, ids[0]!]], // trait name and e-mail identifier, any case
    [`?q=grace.${tag}`, [ids[1]!]], // an identifier value
    [`?q=${people[2]!.userId}`, [ids[2]!]],
    ['?q=linus', [ids[2]!]], // a string trait
    ['?q=7654321', []], // numbers are not searched
    ['?q=%25', [ids[2]!]], // % is a character, not a wildcard
    ['?q=_', [ids[2]!]],
    [`?q=nobody-${tag}`, []],
  ];
  for (const [q, want] of cases) {
    const r = await list(q);
    t.equal(r.status, 200, q);
    t.same(r.body.data.map((p: any) => p.id), want, `search ${q}`);
  }

  const byId = await list(`?kind=userId&value=${people[0]!.userId}`);
  t.same(byId.body.data.map((p: any) => p.id), [ids[0]], 'kind + value still finds the holder');
  expectError(t, await list('?kind=userId'), 422, 'validation_failed', 'kind alone');
  expectError(t, await list('?value=x'), 422, 'validation_failed', 'value alone');
  expectError(t, await list('?cursor=forged'), 422, 'validation_failed', 'forged cursor');

  const other = await createOrg(s);
  const theirs = await list(`?q=${tag}`, other.sessions.admin);
  t.same(theirs.body.data, [], 'another org sees none of them');
  const member = await list(`?q=${tag}`, fx.org.sessions.member);
  t.equal(member.body.data.length, 2, 'org:member reads profiles');
});

t.test('GET /v1/journeys shows the latest version status', async (t) => {
  const fx = await createAppFixture(s);
  await deployJourneys(s, fx, [{ key: 'hello', body: `await ctx.sleep('1s');` }]);
  const r = await call(s.url, 'GET', '/v1/journeys', { token: fx.admin });
  t.equal(r.status, 200);
  const j = r.body.data.find((x: any) => x.key === 'hello');
  t.equal(j.latestVersion.status, 'ready');
  t.equal(j.latestVersion.id, j.versionId, 'the latest is the ready one');
  t.equal(j.latestVersion.error, null);
  t.ok(Date.parse(j.latestVersion.createdAt) > 0);
  const one = await call(s.url, 'GET', '/v1/journeys/hello', { token: fx.org.deployKey });
  t.same(one.body.data.latestVersion, j.latestVersion, 'the single read and the deploy key see the same');
});
