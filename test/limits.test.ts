// Operator limits (OpenAPI description): PATCH /v1/orgs/{orgId} limits, the per-API-key token bucket
// (429 rate_limited + Retry-After), the monthly quota of accepted track calls (429 over_quota;
// identify calls do not count) and the global body limit (413 payload_too_large).
import t from 'tap';
import { batchCall, startServer, call, createOrg, expectError, sleep, createAppFixture, type AppFixture, uid, identifyCall, trackCall } from './helpers/server.js';

/** The documented quota defaults (schemas/resources.ts OrgLimits). */
const QUOTA_DEFAULTS = { artifactBytes: 1073741824, journeys: 1000, webhooks: 100, segments: 1000, runningExecutions: 100000 };

const s = await startServer();
t.teardown(() => s.close());

const identify = (f: AppFixture, data: Record<string, unknown> = {}) => identifyCall(s, f, { identifiers: { anonymousId: uid('anon') }, ...data });
const track = (f: AppFixture, data: Record<string, unknown> = {}) => trackCall(s, f, { identifiers: { anonymousId: uid('anon') }, event: 'E', ...data });
const batch = (f: AppFixture, calls: unknown[]) => batchCall(s, f, calls);
const patchLimits = (orgId: string, limits: Record<string, unknown>, token = s.operatorToken) =>
  call(s.url, 'PATCH', `/v1/orgs/${orgId}`, { token, body: { data: { limits } } });
const bTrack = () => ({ type: 'track', identifiers: { anonymousId: uid('anon') }, event: 'E', messageId: uid('msg') });
const bIdentify = () => ({ type: 'identify', identifiers: { anonymousId: uid('anon') } });

t.test('PATCH /v1/orgs/{orgId} limits: answer, partial updates, validation, auth', async (t) => {
  const org = await createOrg(s);
  const r = await patchLimits(org.org.id, { ratePerSecond: 10, burst: 20 });
  t.equal(r.status, 200, r.text.slice(0, 300));
  t.equal(r.body?.data?.org?.id, org.org.id, 'the org');
  t.equal(r.body?.data?.org?.name, org.org.name);
  t.same(r.body?.data?.limits, { ratePerSecond: 10, burst: 20, monthlyEvents: null, ...QUOTA_DEFAULTS }, 'limits; monthlyEvents null = unlimited');
  const r2 = await patchLimits(org.org.id, { monthlyEvents: 1000 });
  t.same(r2.body?.data?.limits, { ratePerSecond: 10, burst: 20, monthlyEvents: 1000, ...QUOTA_DEFAULTS }, 'a partial object changes only the given member');
  const r3 = await patchLimits(org.org.id, { monthlyEvents: null });
  t.same(r3.body?.data?.limits, { ratePerSecond: 10, burst: 20, monthlyEvents: null, ...QUOTA_DEFAULTS }, 'monthlyEvents back to unlimited');

  const bad: Array<[string, Record<string, unknown>]> = [
    ['ratePerSecond 0', { ratePerSecond: 0 }], ['ratePerSecond negative', { ratePerSecond: -1 }],
    ['ratePerSecond string', { ratePerSecond: 'fast' }], ['burst 0', { burst: 0 }], ['burst string', { burst: '5' }],
    ['monthlyEvents negative', { monthlyEvents: -1 }], ['monthlyEvents fractional', { monthlyEvents: 1.5 }], ['monthlyEvents string', { monthlyEvents: '10' }],
    ...Object.keys(QUOTA_DEFAULTS).flatMap((k): Array<[string, Record<string, unknown>]> => [
      [`${k} negative`, { [k]: -1 }], [`${k} fractional`, { [k]: 2.5 }], [`${k} string`, { [k]: '10' }],
      [`${k} past 2^53`, { [k]: 2 ** 53 + 2 }], [`${k} boolean`, { [k]: true }], [`${k} object`, { [k]: {} }],
    ]),
  ];
  for (const [what, limits] of bad) expectError(t, await patchLimits(org.org.id, limits), 422, 'validation_failed', what);
  const q = await patchLimits(org.org.id, { artifactBytes: 0, journeys: null, webhooks: 9007199254740991 });
  t.same(q.body?.data?.limits, { ratePerSecond: 10, burst: 20, monthlyEvents: null, ...QUOTA_DEFAULTS, artifactBytes: 0, journeys: null, webhooks: 9007199254740991 },
    'quota members: 0, null (unlimited) and 2^53 - 1 accepted');
  await patchLimits(org.org.id, { artifactBytes: QUOTA_DEFAULTS.artifactBytes, journeys: QUOTA_DEFAULTS.journeys, webhooks: QUOTA_DEFAULTS.webhooks });
  const after = await patchLimits(org.org.id, {});
  t.same(after.body?.data?.limits, { ratePerSecond: 10, burst: 20, monthlyEvents: null, ...QUOTA_DEFAULTS }, 'rejected PATCHes changed nothing');
  expectError(t, await patchLimits('org_doesnotexist', { burst: 5 }), 404, 'not_found', 'unknown org');
  expectError(t, await patchLimits(org.org.id, { burst: 5 }, org.sessions.admin), 401, 'invalid_key', 'admin session on an operator route');
  expectError(t, await patchLimits(org.org.id, { burst: 5 }, org.apiKey), 401, 'invalid_key', 'API key on an operator route');
});

t.test('token bucket: the third quick track is 429 rate_limited with Retry-After', async (t) => {
  const f = await createAppFixture(s);
  t.equal((await track(f)).status, 201, 'a track before the change (the key\'s bucket exists)');
  const p = await patchLimits(f.org.org.id, { ratePerSecond: 1, burst: 2 });
  t.equal(p.status, 200);
  t.same(p.body?.data?.limits, { ratePerSecond: 1, burst: 2, monthlyEvents: null, ...QUOTA_DEFAULTS });
  await sleep(1500); // takes effect within one second (limits are re-read each second; nothing shows the re-read)
  const rs = [await track(f), await track(f), await track(f)];
  t.same(rs.map((r) => r.status), [201, 201, 429], `two pass, the third is limited (${rs.map((r) => r.text.slice(0, 120)).join(' | ')})`);
  expectError(t, rs[2]!, 429, 'rate_limited', 'third track');
  const ra = rs[2]!.headers.get('retry-after');
  t.ok(ra !== null && /^\d+$/.test(ra) && Number(ra) >= 1, `Retry-After is a positive integer of seconds (${ra})`);
  expectError(t, await identify(f), 429, 'rate_limited', 'identify shares the key\'s bucket');
  // Another org's key is not affected.
  const other = await createAppFixture(s);
  t.equal((await track(other)).status, 201, 'another org\'s key');
  // After Retry-After the key is admitted again.
  await sleep(Number(ra ?? 1) * 1000 + 100); // the window under test
  t.equal((await track(f)).status, 201, 'admitted after Retry-After');
});

t.test('monthly quota: accepted tracks count, identify does not; then 429 over_quota', async (t) => {
  const f = await createAppFixture(s);
  const p = await patchLimits(f.org.org.id, { monthlyEvents: 2 });
  t.equal(p.status, 200);
  t.same(p.body?.data?.limits?.monthlyEvents, 2);
  await sleep(1500); // limits are re-read within a second
  t.equal((await track(f)).status, 201, 'track 1 accepted');
  for (let i = 0; i < 3; i++) t.equal((await identify(f)).status, 200, `identify ${i + 1} accepted (not counted)`);
  // Rejected tracks are not accepted tracks.
  expectError(t, await track(f, { messageId: '' }), 422, 'validation_failed', 'invalid track');
  t.equal((await track(f)).status, 201, 'track 2 accepted');
  const anon = uid('anon');
  const r3 = await track(f, { identifiers: { anonymousId: anon } });
  expectError(t, r3, 429, 'over_quota', 'track 3 over the quota');
  const l = await call(s.url, 'GET', `/v1/profiles?kind=anonymousId&value=${anon}`, { token: f.admin });
  t.same(l.body?.data, [], 'nothing of the refused track was written');
  t.equal((await identify(f)).status, 200, 'identify still accepted over the quota');
  const b = await batch(f, [bIdentify(), bTrack()]);
  t.equal(b.status, 200);
  t.same(b.body?.data?.map((x: any) => [x.status, x.error?.code ?? null]), [[200, null], [429, 'over_quota']], 'in a batch: identify 200, track 429 over_quota');
  // Raising the quota admits tracks again.
  await patchLimits(f.org.org.id, { monthlyEvents: 3 });
  await sleep(1500); // limits are re-read within a second
  t.equal((await track(f)).status, 201, 'after raising the quota');
  expectError(t, await track(f), 429, 'over_quota', 'used up again');
  await patchLimits(f.org.org.id, { monthlyEvents: null });
  await sleep(1500); // limits are re-read within a second
  t.equal((await track(f)).status, 201, 'unlimited again');
});

t.test('monthly quota counts tracks in a batch', async (t) => {
  const f = await createAppFixture(s);
  t.equal((await patchLimits(f.org.org.id, { monthlyEvents: 3 })).status, 200);
  await sleep(1500); // limits are re-read within a second
  const b1 = await batch(f, [bTrack(), bIdentify(), bTrack()]);
  t.same(b1.body?.data?.map((x: any) => x.status), [201, 200, 201], 'two tracks and an identify');
  const b2 = await batch(f, [bTrack(), bTrack(), bIdentify()]);
  t.same(b2.body?.data?.map((x: any) => [x.status, x.error?.code ?? null]), [[201, null], [429, 'over_quota'], [200, null]], 'the quota ends inside the batch');
  expectError(t, await track(f), 429, 'over_quota', 'single track after the batch');
  // The usage survives the in-memory counter: after the flush and reload it still holds.
  await sleep(2500); // past the usage flush and limits reload (periodic; nothing shows them)
  expectError(t, await track(f), 429, 'over_quota', 'still over the quota after the usage is flushed');
});

t.test('a body over 1 MiB is 413 payload_too_large', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  const big = 'x'.repeat(1024 * 1024 + 16);
  const r = await track(f, { identifiers: { anonymousId: anon }, properties: { blob: big } });
  expectError(t, r, 413, 'payload_too_large', 'track over 1 MiB');
  expectError(t, await identify(f, { identifiers: { anonymousId: anon }, traits: { blob: big } }), 413, 'payload_too_large', 'identify over 1 MiB');
  expectError(t, await batch(f, [{ ...bTrack(), properties: { blob: big } }]), 413, 'payload_too_large', 'batch over 1 MiB');
  const l = await call(s.url, 'GET', `/v1/profiles?kind=anonymousId&value=${anon}`, { token: f.admin });
  t.same(l.body?.data, [], 'nothing written');
  // Just under the limit is accepted.
  const under = 'y'.repeat(1024 * 1024 - 4096);
  const ok = await track(f, { identifiers: { anonymousId: anon }, properties: { blob: under } });
  t.equal(ok.status, 201, `a body just under 1 MiB is accepted (${ok.text.slice(0, 200)})`);
  t.equal(ok.body?.data?.properties?.blob?.length, under.length);
});
