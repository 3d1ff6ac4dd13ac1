// Ingestion (OpenAPI document: "Profile", "Event", "Ingestion"): identify and track,
// messageId dedup, validation, source routing and archiving, canonical trait validations, the
// deny-list, permissive registration, the strict policy with its quarantine, batch, the read routes
// (GET /v1/events, GET /v1/profiles) and lastReceivedAt.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { adminCall, batchCall, startServer, call, clockPast, expectError, markerLanded, poll, createAppFixture, type AppFixture, type Res, uid, identifyCall, trackCall } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const PROFILE_FIELDS = ['anonymous', 'appId', 'consent', 'createdAt', 'environment', 'id', 'identifiers', 'mergedInto', 'orgId', 'sourceId', 'traits', 'updatedAt'];
const EVENT_FIELDS = ['appId', 'environment', 'event', 'id', 'messageId', 'orgId', 'profileId', 'properties', 'receivedAt', 'sourceId', 'timestamp'];
const isDateTime = (v: unknown) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v));

const fixture = (o: { environment?: 'development' | 'production' } = {}) => createAppFixture(s, o);

const identify = (f: AppFixture, data: Record<string, unknown>, token = f.key) => identifyCall(s, f, data, token);
const track = (f: AppFixture, data: Record<string, unknown>, token = f.key) => trackCall(s, f, data, token);
const batch = (f: AppFixture, calls: unknown[], sourceId = f.source.id) => batchCall(s, f, calls, sourceId);
const lookup = (f: AppFixture, kind: string, value: string) =>
  call(s.url, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`, { token: f.admin });
const getProfile = (f: AppFixture, id: string) => call(s.url, 'GET', `/v1/profiles/${id}`, { token: f.admin });
const listEvents = (f: AppFixture, qs: Record<string, string | number> = {}) =>
  call(s.url, 'GET', `/v1/events?${new URLSearchParams(Object.entries(qs).map(([k, v]) => [k, String(v)]))}`, { token: f.admin });
/** Polls GET /v1/events until at least `n` events are listed (events land in ClickHouse asynchronously). */
const waitEvents = (f: AppFixture, qs: Record<string, string | number>, n: number, timeoutMs = 5000) =>
  poll(() => listEvents(f, qs), (r) => r.status === 200 && r.body.data.length >= n, timeoutMs);
const admin = (f: AppFixture, method: string, path: string, data?: unknown) => adminCall(s, f, method, path, data);
const kindsOf = (p: any) => (p.identifiers as any[]).map((i) => `${i.kind}=${i.value}`).sort();

/** Asserts that no live profile holds the identifier (nothing of a rejected call was written). */
async function nothingFor(t: Test, f: AppFixture, kind: string, value: string, what: string) {
  const r = await lookup(f, kind, value);
  t.equal(r.status, 200, `${what}: lookup answers 200`);
  t.same(r.body?.data, [], `${what}: no profile holds ${kind}=${value}`);
}

// ------------------------------------------------------------------ identify

t.test('identify creates a profile with the Profile fields', async (t) => {
  const f = await fixture({ environment: 'development' });
  const anon = uid('anon');
  const before = Date.now();
  const r = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'free', seats: 3 } });
  t.equal(r.status, 200, `200 (${r.text.slice(0, 300)})`);
  t.equal(r.body.meta?.requestId, r.headers.get('x-request-id'), 'meta.requestId');
  const p = r.body.data;
  t.same(Object.keys(p).sort(), PROFILE_FIELDS, 'exactly the Profile fields');
  t.match(p.id, /^prf_/, 'prefixed id');
  t.equal(p.orgId, f.org.org.id, 'orgId');
  t.equal(p.appId, f.app.id, 'appId is the parent app of the source');
  t.equal(p.sourceId, f.source.id, 'sourceId');
  t.equal(p.environment, 'development', 'environment is the app\'s');
  t.same(p.traits, { plan: 'free', seats: 3 }, 'traits');
  t.same(p.consent, {}, 'consent empty');
  t.equal(p.mergedInto, null, 'mergedInto null');
  t.ok(isDateTime(p.createdAt) && isDateTime(p.updatedAt), 'createdAt/updatedAt date-times');
  t.ok(Date.parse(p.createdAt) >= before - 1000 && Date.parse(p.createdAt) <= Date.now() + 1000, 'createdAt is now');
  t.equal(p.identifiers.length, 1, 'one identifier');
  t.same(Object.keys(p.identifiers[0]).sort(), ['createdAt', 'kind', 'value'], 'identifier fields');
  t.equal(p.identifiers[0].kind, 'anonymousId');
  t.equal(p.identifiers[0].value, anon);
  t.ok(isDateTime(p.identifiers[0].createdAt), 'identifier createdAt date-time');
  t.equal(p.anonymous, true, 'anonymous with only an anonymousId');

  const got = await getProfile(f, p.id);
  t.equal(got.status, 200);
  t.same(got.body.data, p, 'GET /v1/profiles/{id} answers the same profile');

  // Same anonymousId again, now with a userId: the same profile, both identifiers, no longer anonymous.
  const user = uid('user');
  const r2 = await identify(f, { identifiers: { anonymousId: anon, userId: user }, traits: { plan: 'pro' } });
  t.equal(r2.status, 200);
  const p2 = r2.body.data;
  t.equal(p2.id, p.id, 'same profile');
  t.same(kindsOf(p2), [`anonymousId=${anon}`, `userId=${user}`].sort(), 'both identifiers attached');
  t.equal(p2.anonymous, false, 'not anonymous once a userId is attached');
  t.same(p2.traits, { plan: 'pro', seats: 3 }, 'traits merged, new value wins');
  t.equal(p2.environment, 'development');
  t.ok(Date.parse(p2.updatedAt) >= Date.parse(p.updatedAt), 'updatedAt moved forward');

  // A profile holding only an email is not anonymous either.
  const r3 = await identify(f, { identifiers: { email: `${uid('e')}@example.com` } });
  t.equal(r3.status, 200);
  t.equal(r3.body.data.anonymous, false, 'email-only profile is not anonymous');
  t.not(r3.body.data.id, p.id, 'a new profile for new identifiers');
  t.equal(r3.body.data.environment, 'development');

  // A production app's profile is production.
  const prod = await fixture();
  const r4 = await identify(prod, { identifiers: { anonymousId: uid('anon') } });
  t.equal(r4.status, 200);
  t.equal(r4.body.data.environment, 'production', 'environment of a production app');
  t.equal(r4.body.data.appId, prod.app.id);
});

t.test('traits.consent (object of booleans) updates consent and is not a trait', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  const r = await identify(f, { identifiers: { anonymousId: anon }, traits: { name: 'Ann', consent: { marketing: true, analytics: false } } });
  t.equal(r.status, 200, r.text.slice(0, 300));
  t.same(r.body.data.consent, { marketing: true, analytics: false }, 'consent set');
  t.same(r.body.data.traits, { name: 'Ann' }, 'consent is not stored as a trait');

  const r2 = await identify(f, { identifiers: { anonymousId: anon }, traits: { consent: { marketing: false, onboarding: true } } });
  t.equal(r2.status, 200);
  t.same(r2.body.data.consent, { marketing: false, analytics: false, onboarding: true }, 'consent merged');
  t.same(r2.body.data.traits, { name: 'Ann' }, 'traits untouched');
  const got = await getProfile(f, r.body.data.id);
  t.same(got.body.data.consent, { marketing: false, analytics: false, onboarding: true }, 'stored consent');
  t.notOk('consent' in got.body.data.traits, 'stored traits have no consent');

  // Not an object of booleans: an ordinary trait, consent untouched.
  const r3 = await identify(f, { identifiers: { anonymousId: anon }, traits: { consent: { marketing: 'yes' } } });
  t.equal(r3.status, 200);
  t.same(r3.body.data.traits, { name: 'Ann', consent: { marketing: 'yes' } }, 'a non-boolean consent object is a trait');
  t.same(r3.body.data.consent, { marketing: false, analytics: false, onboarding: true }, 'consent unchanged');
});

// ------------------------------------------------------------------ track

t.test('track writes an Event (201); timestamp defaults to receivedAt, a given one is kept', async (t) => {
  const f = await fixture({ environment: 'development' });
  const anon = uid('anon');
  const prof = (await identify(f, { identifiers: { anonymousId: anon } })).body.data;
  const before = Date.now();
  const msg = uid('msg');
  const r = await track(f, { identifiers: { anonymousId: anon }, event: 'Signed Up', properties: { plan: 'pro', n: 2, nested: { a: [1, 'b'] } }, messageId: msg });
  const after = Date.now();
  t.equal(r.status, 201, `201 (${r.text.slice(0, 300)})`);
  t.equal(r.body.meta?.requestId, r.headers.get('x-request-id'), 'meta.requestId');
  const e = r.body.data;
  t.same(Object.keys(e).sort(), EVENT_FIELDS, 'exactly the Event fields');
  t.match(e.id, /^evt_/, 'prefixed id');
  t.equal(e.orgId, f.org.org.id);
  t.equal(e.appId, f.app.id);
  t.equal(e.sourceId, f.source.id);
  t.equal(e.profileId, prof.id, 'lands on the profile of its identifiers');
  t.equal(e.environment, 'development', 'environment of the app');
  t.equal(e.event, 'Signed Up');
  t.same(e.properties, { plan: 'pro', n: 2, nested: { a: [1, 'b'] } });
  t.equal(e.messageId, msg);
  t.ok(isDateTime(e.receivedAt) && isDateTime(e.timestamp), 'date-times');
  t.ok(Date.parse(e.receivedAt) >= before - 5 && Date.parse(e.receivedAt) <= after + 5, 'receivedAt is the arrival time');
  t.equal(e.timestamp, e.receivedAt, 'timestamp defaults to receivedAt');

  const r2 = await track(f, { identifiers: { anonymousId: anon }, event: 'Old', timestamp: '2021-06-01T10:20:30.456Z' });
  t.equal(r2.status, 201);
  t.equal(Date.parse(r2.body.data.timestamp), Date.parse('2021-06-01T10:20:30.456Z'), 'given timestamp kept');
  t.ok(isDateTime(r2.body.data.timestamp));
  t.not(r2.body.data.timestamp, r2.body.data.receivedAt, 'receivedAt is still the arrival time');
  t.same(r2.body.data.properties, {}, 'properties default to {}');
  const r3 = await track(f, { identifiers: { anonymousId: anon }, event: 'Offset', timestamp: '2022-01-01T02:00:00+02:00' });
  t.equal(r3.status, 201);
  t.equal(Date.parse(r3.body.data.timestamp), Date.parse('2022-01-01T00:00:00Z'), 'an offset timestamp is the same instant');

  // track with new identifiers creates the profile.
  const anon2 = uid('anon');
  const r4 = await track(f, { identifiers: { anonymousId: anon2 }, event: 'Viewed' });
  t.equal(r4.status, 201);
  const l = await lookup(f, 'anonymousId', anon2);
  t.equal(l.body.data.length, 1, 'track created a profile');
  t.equal(l.body.data[0]?.id, r4.body.data.profileId, 'the event\'s profile');

  const listed = await waitEvents(f, { profileId: prof.id }, 3);
  t.equal(listed.status, 200);
  const first = listed.body.data.find((x: any) => x.id === e.id);
  t.same(first, e, 'GET /v1/events lists the event exactly as track answered it');
});

t.test('track replay with the same messageId answers 200 with the original Event', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  const msg = uid('msg');
  const r1 = await track(f, { identifiers: { anonymousId: anon }, event: 'Purchased', properties: { amount: 10 }, messageId: msg });
  t.equal(r1.status, 201);
  const r2 = await track(f, { identifiers: { anonymousId: anon }, event: 'Purchased', properties: { amount: 10 }, messageId: msg });
  t.equal(r2.status, 200, 'identical replay: 200');
  t.same(r2.body.data, r1.body.data, 'identical replay: the original Event');
  const other = uid('anon');
  const r3 = await track(f, { identifiers: { anonymousId: other }, event: 'Refunded', properties: { amount: 99 }, timestamp: '2020-01-01T00:00:00Z', messageId: msg });
  t.equal(r3.status, 200, 'replay with a different body: 200');
  t.same(r3.body.data, r1.body.data, 'different body: still the original Event (same id, event, properties)');
  await nothingFor(t, f, 'anonymousId', other, 'replay with other identifiers');

  // The same messageId in another app is not a replay (dedup is per org and app).
  const f2 = await createAppFixture(s, { org: f.org });
  const r4 = await track(f2, { identifiers: { anonymousId: anon }, event: 'Purchased', messageId: msg });
  t.equal(r4.status, 201, 'same messageId in another app of the org: a new event');
  t.not(r4.body.data.id, r1.body.data.id);

  const ev = await waitEvents(f, { profileId: r1.body.data.profileId }, 1);
  t.ok(await markerLanded(s, f), 'a later event landed');
  const again = await listEvents(f, { profileId: r1.body.data.profileId });
  t.equal(again.body.data.length, 1, 'the replays wrote nothing');
  t.equal(ev.body.data[0]?.id, r1.body.data.id);
});

t.test('20 concurrent replays of one messageId: one 201, one event', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  const msg = uid('msg');
  const rs = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    track(f, { identifiers: { anonymousId: anon }, event: 'Clicked', properties: { i }, messageId: msg })));
  const statuses = rs.map((r) => r.status);
  t.equal(statuses.filter((x) => x === 201).length, 1, `exactly one 201 (${statuses.join(',')})`);
  t.equal(statuses.filter((x) => x === 200).length, 19, 'nineteen 200 replays');
  const ids = new Set(rs.map((r) => r.body?.data?.id));
  t.equal(ids.size, 1, 'all answer the same event id');
  const original = rs.find((r) => r.status === 201)?.body.data;
  for (const r of rs) t.same(r.body?.data, original, 'every answer is the original Event');
  const profileId = original?.profileId;
  const l = await lookup(f, 'anonymousId', anon);
  t.equal(l.body.data.length, 1, 'one profile');
  t.equal(l.body.data[0]?.id, profileId);

  const ev = await waitEvents(f, { profileId }, 1);
  t.equal(ev.body.data.length, 1, 'listed');
  t.ok(await markerLanded(s, f), 'a later event landed'); // and re-emitted duplicates, if any, before it
  const again = await listEvents(f, { profileId });
  t.equal(again.body.data.length, 1, 'listed exactly once');
  t.equal(again.body.data[0]?.id, original?.id);
});

t.test('identify messageId dedup: a replay answers the original profile and applies nothing', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  const msg = uid('msg');
  const r1 = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'a' }, messageId: msg });
  t.equal(r1.status, 200);
  const r2 = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'b', extra: 1 }, messageId: msg });
  t.equal(r2.status, 200);
  t.equal(r2.body.data.id, r1.body.data.id, 'same profile');
  t.same(r2.body.data.traits, { plan: 'a' }, 'replay did not apply its traits');
  const other = uid('anon');
  const r3 = await identify(f, { identifiers: { anonymousId: other }, traits: { plan: 'c' }, messageId: msg });
  t.equal(r3.status, 200);
  t.equal(r3.body.data.id, r1.body.data.id, 'replay with other identifiers: the original profile');
  await nothingFor(t, f, 'anonymousId', other, 'identify replay');
  const got = await getProfile(f, r1.body.data.id);
  t.same(got.body.data.traits, { plan: 'a' }, 'stored traits unchanged');
  t.same(kindsOf(got.body.data), [`anonymousId=${anon}`], 'no identifier attached by the replay');
  // Without messageId, identify is applied every time.
  const r4 = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'd' } });
  t.same(r4.body.data.traits, { plan: 'd' }, 'identify without messageId applies');
});

// ------------------------------------------------------------------ validation and routing

t.test('invalid calls are 422 validation_failed naming the field', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  const ok = { sourceId: f.source.id, identifiers: { anonymousId: anon } };
  const okTrack = { ...ok, event: 'E', messageId: uid('m') };
  const omit = (o: Record<string, unknown>, k: string) => { const c = { ...o }; delete c[k]; return c; };
  const cases: Array<[string, string, Record<string, unknown>, string]> = [
    ['identify: missing identifiers', '/v1/identify', omit(ok, 'identifiers'), '/data/identifiers'],
    ['identify: empty identifiers', '/v1/identify', { ...ok, identifiers: {} }, '/data/identifiers'],
    ['identify: identifiers not an object', '/v1/identify', { ...ok, identifiers: 'abc' }, '/data/identifiers'],
    ['identify: identifier of 201 chars', '/v1/identify', { ...ok, identifiers: { anonymousId: anon, userId: 'u'.repeat(201) } }, '/data/identifiers/userId'],
    ['identify: empty identifier', '/v1/identify', { ...ok, identifiers: { anonymousId: anon, email: '' } }, '/data/identifiers/email'],
    ['identify: identifier not a string', '/v1/identify', { ...ok, identifiers: { anonymousId: anon, idpId: 7 } }, '/data/identifiers/idpId'],
    ['identify: traits a string', '/v1/identify', { ...ok, traits: 'vip' }, '/data/traits'],
    ['identify: traits an array', '/v1/identify', { ...ok, traits: ['vip'] }, '/data/traits'],
    ['identify: bad timestamp', '/v1/identify', { ...ok, timestamp: 'yesterday' }, '/data/timestamp'],
    ['identify: missing sourceId', '/v1/identify', omit(ok, 'sourceId'), '/data/sourceId'],
    ['identify: empty sourceId', '/v1/identify', { ...ok, sourceId: '' }, '/data/sourceId'],
    ['track: missing identifiers', '/v1/track', omit(okTrack, 'identifiers'), '/data/identifiers'],
    ['track: empty identifiers', '/v1/track', { ...okTrack, identifiers: {} }, '/data/identifiers'],
    ['track: identifier of 201 chars', '/v1/track', { ...okTrack, identifiers: { anonymousId: 'a'.repeat(201) } }, '/data/identifiers/anonymousId'],
    ['track: event of 201 chars', '/v1/track', { ...okTrack, event: 'e'.repeat(201) }, '/data/event'],
    ['track: empty event', '/v1/track', { ...okTrack, event: '' }, '/data/event'],
    ['track: missing event', '/v1/track', omit(okTrack, 'event'), '/data/event'],
    ['track: missing messageId', '/v1/track', omit(okTrack, 'messageId'), '/data/messageId'],
    ['track: empty messageId', '/v1/track', { ...okTrack, messageId: '' }, '/data/messageId'],
    ['track: bad timestamp', '/v1/track', { ...okTrack, timestamp: '2024-13-45T99:00:00Z' }, '/data/timestamp'],
    ['track: timestamp not a string', '/v1/track', { ...okTrack, timestamp: 1700000000 }, '/data/timestamp'],
    ['track: properties an array', '/v1/track', { ...okTrack, properties: [1, 2] }, '/data/properties'],
  ];
  for (const [what, path, data, field] of cases) {
    const r = await call(s.url, 'POST', path, { token: f.key, body: { data } });
    expectError(t, r, 422, 'validation_failed', what, field);
  }
  // Bodies nested deeper than 64 levels are refused.
  let deep: any = 'leaf';
  for (let i = 0; i < 70; i++) deep = { d: deep };
  expectError(t, await call(s.url, 'POST', '/v1/track', { token: f.key, body: { data: { ...okTrack, properties: deep } } }), 422, 'validation_failed', 'track: properties nested 70 levels');
  let shallow: any = 'leaf';
  for (let i = 0; i < 50; i++) shallow = { d: shallow };
  t.equal((await track(f, { identifiers: { anonymousId: uid('anon') }, event: 'Deep', properties: shallow })).status, 201, 'properties nested 50 levels accepted');
  // Identifier of exactly 200 characters is fine.
  const r200 = await identify(f, { identifiers: { userId: 'u'.repeat(199) + '1' } });
  t.equal(r200.status, 200, 'identifier of 200 chars accepted');
  const e200 = await track(f, { identifiers: { anonymousId: anon }, event: 'e'.repeat(200) });
  t.equal(e200.status, 201, 'event name of 200 chars accepted');
  t.equal(e200.body.data.event.length, 200);
  // Nothing of the invalid calls was written: the only profile of `anon` is the one the valid track made.
  const l = await lookup(f, 'anonymousId', anon);
  t.equal(l.body.data.length, 1);
  t.same(l.body.data[0]?.traits, {}, 'no traits from rejected calls');
});

t.test('unknown sourceId and another org\'s sourceId are 404 not_found', async (t) => {
  const f = await fixture();
  const other = await fixture();
  const cases: Array<[string, string]> = [['unknown', 'src_doesnotexist0000'], ['another org\'s', other.source.id]];
  for (const [what, sourceId] of cases) {
    const anon = uid('anon');
    const i = await identify(f, { sourceId, identifiers: { anonymousId: anon } });
    expectError(t, i, 404, 'not_found', `identify, ${what} source`);
    const tr = await track(f, { sourceId, identifiers: { anonymousId: anon }, event: 'E' });
    expectError(t, tr, 404, 'not_found', `track, ${what} source`);
    await nothingFor(t, other, 'anonymousId', anon, `${what} source`);
  }
});

t.test('an archived source is refused with 403 forbidden at once', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  t.equal((await identify(f, { identifiers: { anonymousId: anon } })).status, 200, 'works before archiving');
  t.equal((await track(f, { identifiers: { anonymousId: anon }, event: 'E' })).status, 201);
  const del = await admin(f, 'DELETE', `/v1/sources/${f.source.id}`);
  t.equal(del.status, 200, 'archived');
  t.ok(isDateTime(del.body.data.archivedAt), 'archivedAt set');
  const anon2 = uid('anon');
  expectError(t, await identify(f, { identifiers: { anonymousId: anon2 } }), 403, 'forbidden', 'identify right after archiving');
  expectError(t, await track(f, { identifiers: { anonymousId: anon2 }, event: 'E' }), 403, 'forbidden', 'track right after archiving');
  const b = await batch(f, [{ type: 'identify', identifiers: { anonymousId: anon2 } }, { type: 'track', identifiers: { anonymousId: anon2 }, event: 'E', messageId: uid('m') }]);
  t.equal(b.status, 200, 'batch answers 200');
  t.same(b.body.data?.map((x: any) => [x.status, x.error?.code]), [[403, 'forbidden'], [403, 'forbidden']], 'each batch call 403 forbidden');
  await nothingFor(t, f, 'anonymousId', anon2, 'archived source');
  // A fresh api source of the same app works.
  const fresh = await admin(f, 'POST', `/v1/apps/${f.app.id}/sources`, { kind: 'api' });
  t.equal(fresh.status, 201);
  const r = await identify(f, { sourceId: fresh.body.data.id, identifiers: { anonymousId: anon } });
  t.equal(r.status, 200, 'a fresh api source ingests');
  t.equal(r.body.data.appId, f.app.id, 'same app, same profiles');
  t.equal(r.body.data.sourceId, f.source.id, 'the existing profile (created through the first source)');
});

t.test('wrong credentials on ingestion: session 401 invalid_key, deploy key 403 deploy_key_scope', async (t) => {
  const f = await fixture();
  const data = { sourceId: f.source.id, identifiers: { anonymousId: uid('anon') }, event: 'E', messageId: uid('m') };
  for (const path of ['/v1/track', '/v1/identify', '/v1/batch']) {
    const body = path === '/v1/batch' ? { data: { sourceId: f.source.id, calls: [{ type: 'track', ...data }] } } : { data };
    expectError(t, await call(s.url, 'POST', path, { token: f.org.sessions.admin, body }), 401, 'invalid_key', `${path}: admin session`);
    expectError(t, await call(s.url, 'POST', path, { token: f.org.sessions.member, body }), 401, 'invalid_key', `${path}: member session`);
    expectError(t, await call(s.url, 'POST', path, { token: f.org.pipelineKey, body }), 401, 'invalid_key', `${path}: pipeline key`);
    expectError(t, await call(s.url, 'POST', path, { token: f.org.deployKey, body }), 403, 'deploy_key_scope', `${path}: deploy key`);
    expectError(t, await call(s.url, 'POST', path, { body }), 401, 'invalid_key', `${path}: no credential`);
    expectError(t, await call(s.url, 'POST', path, { token: s.operatorToken, body }), 401, 'invalid_key', `${path}: operator token`);
  }
  await nothingFor(t, f, 'anonymousId', data.identifiers.anonymousId, 'refused credentials');
  // Read routes are Session only.
  expectError(t, await call(s.url, 'GET', '/v1/events', { token: f.key }), 401, 'invalid_key', 'GET /v1/events with the API key');
  expectError(t, await call(s.url, 'GET', '/v1/profiles?kind=userId&value=x', { token: f.key }), 401, 'invalid_key', 'GET /v1/profiles with the API key');
});

// ------------------------------------------------------------------ canonical trait validations

t.test('canonical trait validations: 422 trait_validation_failed naming the trait, nothing written', async (t) => {
  const f = await fixture();
  const valid: Array<[string, unknown]> = [
    ['email', 'ann@example.com'], ['email', 'first.last+tag@sub.example.co.uk'],
    ['phone', '+14155552671'], ['phone', '+442071838750'],
    ['createdAt', '2024-01-02T03:04:05Z'], ['createdAt', '2024-01-02T03:04:05.123+02:00'],
    ['birthday', '1990-05-17'],
    ['website', 'https://example.com'], ['website', 'http://example.com/path?q=1'],
    ['avatar', 'https://cdn.example.com/a.png'],
    ['age', 0], ['age', 150], ['age', 42], ['age', 33.5],
  ];
  const invalid: Array<[string, unknown]> = [
    ['email', 'not-an-email'], ['email', 'ann@'], ['email', '@example.com'], ['email', 42],
    ['phone', '4155552671'], ['phone', '+1 415 555 2671'], ['phone', '+0123456789'], ['phone', 'call me'], ['phone', 14155552671],
    ['createdAt', '2024-01-02'], ['createdAt', 'yesterday'], ['createdAt', 1700000000],
    ['birthday', '17/05/1990'], ['birthday', '1990-13-01'], ['birthday', 'May 17'],
    ['website', 'example.com'], ['website', 'ftp://example.com'], ['website', '/relative/path'],
    ['avatar', 'javascript:alert(1)'], ['avatar', 'cdn.example.com/a.png'],
    ['age', -1], ['age', 151], ['age', '30'], ['age', true],
  ];
  for (const [trait, value] of valid) {
    const r = await identify(f, { identifiers: { anonymousId: uid('anon') }, traits: { [trait]: value } });
    t.equal(r.status, 200, `valid ${trait}=${JSON.stringify(value)} accepted (${r.status} ${r.text.slice(0, 200)})`);
    t.same(r.body?.data?.traits?.[trait], value, `valid ${trait} stored`);
  }
  for (const [trait, value] of invalid) {
    const anon = uid('anon');
    const r = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'x', [trait]: value } });
    expectError(t, r, 422, 'trait_validation_failed', `invalid ${trait}=${JSON.stringify(value)}`, trait);
    await nothingFor(t, f, 'anonymousId', anon, `invalid ${trait}=${JSON.stringify(value)}`);
  }
  // On an existing profile, a rejected call changes nothing: no traits, no identifiers.
  const anon = uid('anon');
  const p = (await identify(f, { identifiers: { anonymousId: anon }, traits: { name: 'Ann', email: 'ann@example.com' } })).body.data;
  const user = uid('user');
  const r = await identify(f, { identifiers: { anonymousId: anon, userId: user }, traits: { name: 'Bob', email: 'bob@', consent: { marketing: true } } });
  expectError(t, r, 422, 'trait_validation_failed', 'existing profile, bad email', 'email');
  const got = await getProfile(f, p.id);
  t.same(got.body.data.traits, { name: 'Ann', email: 'ann@example.com' }, 'traits unchanged');
  t.same(got.body.data.consent, {}, 'consent unchanged');
  t.same(kindsOf(got.body.data), [`anonymousId=${anon}`], 'no identifier attached');
  await nothingFor(t, f, 'userId', user, 'rejected identify with a userId');
});

// ------------------------------------------------------------------ deny-list

t.test('deny-list: a denied event is 422 event_denied, a denied trait 422 trait_denied, nothing written', async (t) => {
  const f = await fixture();
  // An event registered by observation (permissive), then denied.
  const anon0 = uid('anon');
  t.equal((await track(f, { identifiers: { anonymousId: anon0 }, event: 'spammy' })).status, 201, 'accepted before the deny');
  const st = await admin(f, 'POST', '/v1/catalog/events/spammy/state', { state: 'denied' });
  t.equal(st.status, 200, `deny event (${st.text.slice(0, 200)})`);
  t.equal(st.body?.data?.state, 'denied');
  // An event registered by the admin, then denied.
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'Card Number Entered' })).status, 201, 'registered');
  t.equal((await admin(f, 'POST', `/v1/catalog/events/${encodeURIComponent('Card Number Entered')}/state`, { state: 'denied' })).status, 200);

  for (const ev of ['spammy', 'Card Number Entered']) {
    const anon = uid('anon');
    const msg = uid('msg');
    const r = await track(f, { identifiers: { anonymousId: anon }, event: ev, properties: { a: 1 }, messageId: msg });
    expectError(t, r, 422, 'event_denied', `track ${ev}`);
    await nothingFor(t, f, 'anonymousId', anon, `denied event ${ev}`);
  }
  // The existing profile gets no event either.
  const r0 = await track(f, { identifiers: { anonymousId: anon0 }, event: 'spammy' });
  expectError(t, r0, 422, 'event_denied', 'denied event on an existing profile');

  // Nothing of the rejected call was written, not even its messageId: after allowing, it is new.
  const anon = uid('anon');
  const msg = uid('msg');
  expectError(t, await track(f, { identifiers: { anonymousId: anon }, event: 'spammy', messageId: msg }), 422, 'event_denied', 'before re-allow');
  t.equal((await admin(f, 'POST', '/v1/catalog/events/spammy/state', { state: 'allowed' })).status, 200, 're-allowed');
  const again = await track(f, { identifiers: { anonymousId: anon }, event: 'spammy', messageId: msg });
  t.equal(again.status, 201, 'the rejected messageId was not claimed: 201 after re-allow');

  // Traits.
  t.equal((await admin(f, 'POST', '/v1/catalog/traits', { name: 'ssn', type: 'string' })).status, 201, 'trait registered');
  const ts = await admin(f, 'POST', '/v1/catalog/traits/ssn/state', { state: 'denied' });
  t.equal(ts.status, 200, 'trait denied');
  t.equal(ts.body?.data?.state, 'denied');
  const anonT = uid('anon');
  expectError(t, await identify(f, { identifiers: { anonymousId: anonT }, traits: { plan: 'x', ssn: '123-45-6789' } }), 422, 'trait_denied', 'identify with a denied trait');
  await nothingFor(t, f, 'anonymousId', anonT, 'denied trait');
  const p = (await identify(f, { identifiers: { anonymousId: anonT }, traits: { plan: 'free' } })).body.data;
  const user = uid('user');
  expectError(t, await identify(f, { identifiers: { anonymousId: anonT, userId: user }, traits: { plan: 'pro', ssn: '1' } }), 422, 'trait_denied', 'existing profile');
  const got = await getProfile(f, p.id);
  t.same(got.body.data.traits, { plan: 'free' }, 'traits unchanged by the rejected identify');
  await nothingFor(t, f, 'userId', user, 'denied trait with a userId');
  // A trait observed permissively, then denied.
  t.equal((await identify(f, { identifiers: { anonymousId: uid('anon') }, traits: { shoeSize: 42 } })).status, 200);
  t.equal((await admin(f, 'POST', '/v1/catalog/traits/shoeSize/state', { state: 'denied' })).status, 200);
  expectError(t, await identify(f, { identifiers: { anonymousId: uid('anon') }, traits: { shoeSize: 43 } }), 422, 'trait_denied', 'observed trait, then denied');
});

// ------------------------------------------------------------------ permissive registration

t.test('permissive: unknown names are registered as allowed with observed types', async (t) => {
  const f = await fixture();
  const settings = await admin(f, 'GET', '/v1/settings');
  t.equal(settings.status, 200);
  t.equal(settings.body?.data?.ingestionPolicy, 'permissive', 'default policy is permissive');
  const r = await track(f, {
    identifiers: { anonymousId: uid('anon') }, event: 'Plan Chosen',
    properties: { plan: 'pro', seats: 3, tags: ['a', 'b'], mixed: [1, 'a'], empty: [], flag: true, meta: { a: 1 }, nums: [1, 2.5], flags: [true], objs: [{}, { a: 1 }] },
  });
  t.equal(r.status, 201, 'unknown event accepted');
  const want = {
    plan: 'string', seats: 'number', tags: 'array<string>', mixed: 'array<any>', empty: 'array<any>',
    flag: 'boolean', meta: 'object', nums: 'array<number>', flags: 'array<boolean>', objs: 'array<object>',
  };
  const path = `/v1/catalog/events/${encodeURIComponent('Plan Chosen')}`;
  const ce = await poll(() => admin(f, 'GET', path), (x) => x.status === 200, 2000);
  t.equal(ce.status, 200, `catalog event registered (${ce.text.slice(0, 200)})`);
  t.equal(ce.body?.data?.name, 'Plan Chosen');
  t.equal(ce.body?.data?.orgId, f.org.org.id);
  t.equal(ce.body?.data?.state, 'allowed');
  t.same(ce.body?.data?.properties, want, 'observed property types');

  // Observation keeps the types current: a new property is added.
  t.equal((await track(f, { identifiers: { anonymousId: uid('anon') }, event: 'Plan Chosen', properties: { plan: 'team', coupon: 'X1' } })).status, 201);
  const ce2 = await poll(() => admin(f, 'GET', path), (x) => x.body?.data?.properties?.coupon !== undefined, 2000);
  t.same(ce2.body?.data?.properties, { ...want, coupon: 'string' }, 'new property observed');

  const tr = await identify(f, { identifiers: { anonymousId: uid('anon') }, traits: { favoriteColor: 'blue', shoeSize: 42, pets: ['cat'] } });
  t.equal(tr.status, 200);
  for (const [name, type] of [['favoriteColor', 'string'], ['shoeSize', 'number'], ['pets', 'array<string>']]) {
    const ct = await poll(() => admin(f, 'GET', `/v1/catalog/traits/${name}`), (x) => x.status === 200, 2000);
    t.equal(ct.status, 200, `trait ${name} registered`);
    t.equal(ct.body?.data?.state, 'allowed', `trait ${name} allowed`);
    t.equal(ct.body?.data?.type, type, `trait ${name} type ${type}`);
  }
});

// ------------------------------------------------------------------ strict policy

t.test('strict: unknown events are held, replays answer quarantined, promote writes them in arrival order', async (t) => {
  const f = await fixture();
  // Registered while permissive: stays allowed.
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'Known' })).status, 201);
  const ps = await admin(f, 'PATCH', '/v1/settings', { ingestionPolicy: 'strict' });
  t.equal(ps.status, 200, `settings patched (${ps.text.slice(0, 200)})`);
  t.equal(ps.body?.data?.ingestionPolicy, 'strict');
  t.equal((await admin(f, 'GET', '/v1/settings')).body?.data?.ingestionPolicy, 'strict', 'GET /v1/settings says strict');

  const anon = uid('anon');
  const msgs = [uid('m1'), uid('m2'), uid('m3')];
  for (let i = 0; i < 3; i++) {
    const r = await track(f, { identifiers: { anonymousId: anon }, event: 'Held', properties: { n: i + 1 }, messageId: msgs[i] });
    t.equal(r.status, 200, `held ${i + 1}: 200`);
    t.same(r.body?.data, { status: 'quarantined' }, `held ${i + 1}: quarantined answer`);
    await clockPast(new Date().toISOString()); // distinct arrival instants
  }
  const rep = await track(f, { identifiers: { anonymousId: anon }, event: 'Held', properties: { n: 99 }, messageId: msgs[0] });
  t.equal(rep.status, 200, 'replay of a held event: 200');
  t.same(rep.body?.data, { status: 'quarantined' }, 'replay of a held event: the quarantined answer');
  await nothingFor(t, f, 'anonymousId', anon, 'a held track is held whole');
  const notInCatalog = await admin(f, 'GET', '/v1/catalog/events/Held');
  expectError(t, notInCatalog, 404, 'not_found', 'a held name is not in the catalog');

  const known = await track(f, { identifiers: { anonymousId: uid('anon') }, event: 'Known' });
  t.equal(known.status, 201, 'a catalog event is written under strict');

  // The later catalog event landed: the held ones, had they been written, before it.
  t.equal((await waitEvents(f, { profileId: known.body.data.profileId }, 1)).body?.data?.length, 1, 'the catalog event landed');
  t.same((await listEvents(f, { event: 'Held' })).body?.data, [], 'nothing of the held events listed');

  const pr = await admin(f, 'POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Held' });
  t.equal(pr.status, 200, `promote (${pr.text.slice(0, 200)})`);
  t.same(pr.body?.data, { promoted: 3 }, 'three held values applied');
  const ce = await admin(f, 'GET', '/v1/catalog/events/Held');
  t.equal(ce.status, 200, 'promoted name is in the catalog');
  t.equal(ce.body?.data?.state, 'allowed', 'promoted name is allowed');

  const ev = await waitEvents(f, { event: 'Held' }, 3);
  t.equal(ev.body?.data?.length, 3, 'the three events are listed');
  t.same(ev.body?.data?.map((e: any) => e.properties.n), [3, 2, 1], 'arrival order (listed newest first)');
  t.same(ev.body?.data?.map((e: any) => e.messageId), [...msgs].reverse(), 'their messageIds');
  const l = await lookup(f, 'anonymousId', anon);
  t.equal(l.body?.data?.length, 1, 'the profile exists after promote');
  t.ok(ev.body?.data?.every((e: any) => e.profileId === l.body?.data?.[0]?.id), 'events on that profile');
  t.ok(ev.body?.data?.every((e: any) => e.appId === f.app.id && e.sourceId === f.source.id), 'attributed to app and source');

  const after = await track(f, { identifiers: { anonymousId: anon }, event: 'Held' });
  t.equal(after.status, 201, 'a promoted event is written from now on');
  const none = await admin(f, 'POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Held' });
  t.same(none.body?.data, { promoted: 0 }, 'nothing left to promote');
  const nothing = await admin(f, 'POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'NeverSeen' });
  t.equal(nothing.status, 200);
  t.same(nothing.body?.data, { promoted: 0 }, 'promote of a name with nothing held: 0');
});

t.test('strict: unknown traits are held and the profile answered without them; promote sets them', async (t) => {
  const f = await fixture();
  t.equal((await admin(f, 'POST', '/v1/catalog/traits', { name: 'name', type: 'string' })).status, 201);
  t.equal((await admin(f, 'PATCH', '/v1/settings', { ingestionPolicy: 'strict' })).status, 200);
  const anon = uid('anon');
  const r = await identify(f, { identifiers: { anonymousId: anon }, traits: { name: 'Ann', plan: 'a' } });
  t.equal(r.status, 200, r.text.slice(0, 200));
  t.same(r.body?.data?.traits, { name: 'Ann' }, 'known trait applied, unknown held');
  const r2 = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'b' } });
  t.equal(r2.status, 200);
  t.same(r2.body?.data?.traits, { name: 'Ann' }, 'second held value');
  const id = r.body?.data?.id;
  t.same((await getProfile(f, id)).body?.data?.traits, { name: 'Ann' }, 'stored without the held trait');

  const pr = await admin(f, 'POST', '/v1/catalog/quarantine/promote', { kind: 'trait', name: 'plan' });
  t.equal(pr.status, 200);
  t.same(pr.body?.data, { promoted: 2 }, 'two held values applied');
  const got = await poll(() => getProfile(f, id), (x) => x.body?.data?.traits?.plan !== undefined, 2000);
  t.same(got.body?.data?.traits, { name: 'Ann', plan: 'b' }, 'trait set; the later value wins (arrival order)');
  const ct = await admin(f, 'GET', '/v1/catalog/traits/plan');
  t.equal(ct.body?.data?.state, 'allowed', 'promoted trait allowed');
  const r3 = await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'c' } });
  t.same(r3.body?.data?.traits, { name: 'Ann', plan: 'c' }, 'applied directly from now on');
});

t.test('strict: denying a held name drops its values', async (t) => {
  const f = await fixture();
  t.equal((await admin(f, 'PATCH', '/v1/settings', { ingestionPolicy: 'strict' })).status, 200);
  const anon = uid('anon');
  const r0 = await track(f, { identifiers: { anonymousId: anon }, event: 'Junk', properties: { i: 0 } });
  t.same(r0.body?.data, { status: 'quarantined' }, 'held 0');
  const b = await batch(f, [{ type: 'track', identifiers: { anonymousId: anon }, event: 'Junk', properties: { i: 1 }, messageId: uid('m') }]);
  t.same(b.body?.data, [{ status: 200, data: { status: 'quarantined' } }], 'held 1 (in a batch): 200 quarantined');
  const p = await identify(f, { identifiers: { anonymousId: uid('anon') }, traits: { junkTrait: 1 } });
  t.equal(p.status, 200);
  t.same(p.body?.data?.traits, {}, 'trait held');
  const de = await admin(f, 'POST', '/v1/catalog/quarantine/deny', { kind: 'event', name: 'Junk' });
  t.equal(de.status, 200, `deny (${de.text.slice(0, 200)})`);
  t.same(de.body?.data, { dropped: 2 }, 'two held events dropped');
  const dt = await admin(f, 'POST', '/v1/catalog/quarantine/deny', { kind: 'trait', name: 'junkTrait' });
  t.same(dt.body?.data, { dropped: 1 }, 'one held trait dropped');
  t.equal((await admin(f, 'GET', '/v1/catalog/events/Junk')).body?.data?.state, 'denied', 'event now denied');
  t.equal((await admin(f, 'GET', '/v1/catalog/traits/junkTrait')).body?.data?.state, 'denied', 'trait now denied');
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'test_marker' })).status, 201);
  t.ok(await markerLanded(s, f), 'a later event landed');
  t.same((await listEvents(f, { event: 'Junk' })).body?.data, [], 'nothing written');
  await nothingFor(t, f, 'anonymousId', anon, 'dropped track');
  t.same((await getProfile(f, p.body.data.id)).body?.data?.traits, {}, 'trait never set');
  expectError(t, await track(f, { identifiers: { anonymousId: anon }, event: 'Junk' }), 422, 'event_denied', 'denied after deny');
  expectError(t, await identify(f, { identifiers: { anonymousId: anon }, traits: { junkTrait: 2 } }), 422, 'trait_denied', 'trait denied after deny');
  const again = await admin(f, 'POST', '/v1/catalog/quarantine/deny', { kind: 'event', name: 'Junk' });
  t.same(again.body?.data, { dropped: 0 }, 'nothing left to drop');
});

// ------------------------------------------------------------------ batch

t.test('batch: one result per call, in order, each judged on its own', async (t) => {
  const f = await fixture();
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'Forbidden' })).status, 201);
  t.equal((await admin(f, 'POST', '/v1/catalog/events/Forbidden/state', { state: 'denied' })).status, 200);
  const anon = uid('anon');
  const prior = await track(f, { identifiers: { anonymousId: anon }, event: 'First' });
  t.equal(prior.status, 201);
  const anonBad = uid('anon');
  const calls = [
    { type: 'identify', identifiers: { anonymousId: anon }, traits: { plan: 'pro' } },
    { type: 'track', identifiers: { anonymousId: anon }, event: 'Second', properties: { k: 1 }, messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: anonBad }, event: 'NoMessageId' },
    { type: 'identify', identifiers: { anonymousId: anonBad }, traits: { email: 'nope' } },
    { type: 'frobnicate', identifiers: { anonymousId: anonBad } },
    { type: 'track', identifiers: { anonymousId: anonBad }, event: 'Forbidden', messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: uid('other') }, event: 'Replay', messageId: prior.body.data.messageId },
    { type: 'identify', identifiers: {} },
    { type: 'track', identifiers: { userId: uid('user') }, event: 'Third', messageId: uid('m') },
  ];
  const r = await batch(f, calls);
  t.equal(r.status, 200, `200 (${r.text.slice(0, 300)})`);
  const out = r.body?.data ?? [];
  t.equal(out.length, calls.length, 'one result per call');
  const shape = out.map((x: any) => [x.status, x.error?.code ?? null]);
  t.same(shape, [
    [200, null], [201, null], [422, 'validation_failed'], [422, 'trait_validation_failed'], [422, 'validation_failed'],
    [422, 'event_denied'], [200, null], [422, 'validation_failed'], [201, null],
  ], 'statuses and codes in order');
  t.same(Object.keys(out[0]?.data ?? {}).sort(), PROFILE_FIELDS, 'identify result is a Profile');
  t.same(out[0]?.data?.traits, { plan: 'pro' });
  t.same(Object.keys(out[1]?.data ?? {}).sort(), EVENT_FIELDS, 'track result is an Event');
  t.equal(out[1]?.data?.profileId, prior.body.data.profileId, 'on the same profile');
  t.equal(out[1]?.data?.event, 'Second');
  t.match(out[2]?.error?.message, /messageId/, 'validation message names the field');
  t.match(out[3]?.error?.message, /email/, 'trait message names the trait');
  t.same(out[6]?.data, prior.body.data, 'a replay in a batch answers the original Event');
  t.equal(out[8]?.data?.event, 'Third');
  for (const x of out) {
    if ('error' in x) t.ok(typeof x.error.message === 'string' && x.error.message.length > 0, 'error message');
    t.notOk('error' in x && 'data' in x, 'data or error, not both');
  }
  await nothingFor(t, f, 'anonymousId', anonBad, 'rejected batch calls');
  const ev = await waitEvents(f, { profileId: prior.body.data.profileId }, 2);
  t.same(ev.body?.data?.map((e: any) => e.event).sort(), ['First', 'Second'], 'the accepted track landed');

  // Whole-request validation.
  expectError(t, await batch(f, []), 422, 'validation_failed', 'empty calls', '/data/calls');
  const many = Array.from({ length: 501 }, () => ({ type: 'identify', identifiers: { anonymousId: anon } }));
  expectError(t, await batch(f, many), 422, 'validation_failed', '501 calls', '/data/calls');
  // Unknown source: each call 404.
  const unk = await batch(f, calls.slice(0, 2), 'src_doesnotexist0000');
  t.equal(unk.status, 200, 'unknown source batch answers 200');
  t.same(unk.body?.data?.map((x: any) => [x.status, x.error?.code]), [[404, 'not_found'], [404, 'not_found']], 'each call 404 not_found');
  // The source is looked up once per batch, but each call is still judged on its own: an invalid
  // call says what is wrong with it, whatever the source.
  const mixed = await batch(f, [calls[0], { type: 'track' }], 'src_doesnotexist0000');
  t.same(mixed.body?.data?.map((x: any) => [x.status, x.error?.code]), [[404, 'not_found'], [422, 'validation_failed']], 'invalid call 422, valid call 404');
});

// ------------------------------------------------------------------ read routes

t.test('GET /v1/events filters and cursor pagination, newest first', async (t) => {
  const a = await fixture();
  const b = await createAppFixture(s, { org: a.org });
  const p1 = uid('p1'); const p2 = uid('p2'); const p3 = uid('p3');
  const spec: Array<[AppFixture, string, string, string]> = [
    [a, p1, 'page', '2024-01-01T00:00:00.000Z'],
    [a, p1, 'click', '2024-01-02T00:00:00.000Z'],
    [a, p2, 'page', '2024-01-03T00:00:00.000Z'],
    [b, p3, 'page', '2024-01-04T00:00:00.000Z'],
    [a, p2, 'click', '2024-01-05T00:00:00.000Z'],
  ];
  const ev: any[] = [];
  for (const [f, anon, name, ts] of spec) {
    const r = await track(f, { identifiers: { anonymousId: anon }, event: name, timestamp: ts, properties: { ts } });
    t.equal(r.status, 201);
    ev.push(r.body.data);
  }
  const [e1, e2, e3, e4, e5] = ev;
  const all = await waitEvents(a, {}, 5);
  t.equal(all.status, 200);
  t.same(all.body.data, [e5, e4, e3, e2, e1], 'all events of the org, newest first, as track answered them');
  t.equal(all.body.meta?.hasMore, false);
  t.equal(all.body.meta?.nextCursor, null);
  const ids = (r: Res) => (r.body?.data ?? []).map((x: any) => x.id);
  const cases: Array<[string, Record<string, string | number>, any[]]> = [
    ['event', { event: 'page' }, [e4, e3, e1]],
    ['profileId', { profileId: e1.profileId }, [e2, e1]],
    ['appId', { appId: b.app.id }, [e4]],
    ['appId a', { appId: a.app.id }, [e5, e3, e2, e1]],
    ['since (inclusive)', { since: '2024-01-02T00:00:00.000Z' }, [e5, e4, e3, e2]],
    ['until (exclusive)', { until: '2024-01-04T00:00:00.000Z' }, [e3, e2, e1]],
    ['since and until', { since: '2024-01-02T00:00:00Z', until: '2024-01-04T00:00:00Z' }, [e3, e2]],
    ['event and appId', { event: 'page', appId: a.app.id }, [e3, e1]],
    ['event and profileId', { event: 'click', profileId: e3.profileId }, [e5]],
    ['no match', { event: 'nothing' }, []],
  ];
  for (const [what, qs, want] of cases) {
    const r = await listEvents(a, qs);
    t.equal(r.status, 200, `${what}: 200`);
    t.same(ids(r), want.map((x) => x.id), `${what}: ${want.length} events`);
  }
  // Pagination.
  const pg1 = await listEvents(a, { limit: 2 });
  t.same(ids(pg1), [e5.id, e4.id], 'page 1');
  t.equal(pg1.body.meta?.hasMore, true);
  t.type(pg1.body.meta?.nextCursor, 'string');
  const pg2 = await listEvents(a, { limit: 2, cursor: pg1.body.meta.nextCursor });
  t.same(ids(pg2), [e3.id, e2.id], 'page 2');
  t.equal(pg2.body.meta?.hasMore, true);
  const pg3 = await listEvents(a, { limit: 2, cursor: pg2.body.meta.nextCursor });
  t.same(ids(pg3), [e1.id], 'page 3');
  t.equal(pg3.body.meta?.hasMore, false);
  t.equal(pg3.body.meta?.nextCursor, null);
  const fpg1 = await listEvents(a, { limit: 1, event: 'page' });
  const fpg2 = await listEvents(a, { limit: 1, event: 'page', cursor: fpg1.body.meta?.nextCursor });
  t.same([...ids(fpg1), ...ids(fpg2)], [e4.id, e3.id], 'pagination keeps the filter');
  // Same timestamp: the cursor still walks every event exactly once.
  const same = '2023-05-05T05:05:05.000Z';
  const anon = uid('same');
  for (let i = 0; i < 5; i++) t.equal((await track(a, { identifiers: { anonymousId: anon }, event: 'tie', timestamp: same })).status, 201);
  await waitEvents(a, { event: 'tie' }, 5);
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 6; i++) {
    const r = await listEvents(a, cursor ? { event: 'tie', limit: 2, cursor } : { event: 'tie', limit: 2 });
    seen.push(...ids(r));
    cursor = r.body?.meta?.nextCursor ?? undefined;
    if (!cursor) break;
  }
  t.equal(seen.length, 5, 'tied timestamps: five events over the pages');
  t.equal(new Set(seen).size, 5, 'tied timestamps: none repeated');

  for (const [what, qs] of [['limit 0', { limit: 0 }], ['limit 101', { limit: 101 }], ['bad since', { since: 'yesterday' }], ['bad until', { until: '2024-99-01' }]] as const) {
    expectError(t, await listEvents(a, qs as any), 422, 'validation_failed', what);
  }
  // Other orgs see none of it; the member session reads.
  const other = await fixture();
  t.same((await listEvents(other, {})).body?.data, [], 'another org lists nothing');
  t.same((await listEvents(other, { profileId: e1.profileId })).body?.data, [], 'another org\'s profileId lists nothing');
  const member = await call(s.url, 'GET', '/v1/events?limit=1', { token: a.org.sessions.member });
  t.equal(member.status, 200, 'member session reads events');
  t.same(ids(member), [e5.id]);
});

t.test('GET /v1/profiles?kind=&value= returns the live profile', async (t) => {
  const f = await fixture();
  const email = `${uid('e')}@example.com`;
  const user = uid('user');
  const p = (await identify(f, { identifiers: { userId: user, email }, traits: { name: 'Ann' } })).body.data;
  const r = await lookup(f, 'email', email);
  t.equal(r.status, 200);
  t.equal(r.body.data.length, 1, 'one profile');
  t.same(r.body.data[0], p, 'the profile as identify answered it');
  t.same((await lookup(f, 'userId', user)).body.data.map((x: any) => x.id), [p.id], 'by userId');
  t.same((await lookup(f, 'email', `nobody-${email}`)).body.data, [], 'unknown value: empty list');
  t.same((await lookup(f, 'userId', email)).body.data, [], 'kind matters');
  const other = await fixture();
  t.same((await lookup(other, 'email', email)).body.data, [], 'another org finds nothing');
  expectError(t, await lookup(f, 'phone', '1'), 422, 'validation_failed', 'unknown kind', 'kind');
  expectError(t, await call(s.url, 'GET', '/v1/profiles?kind=email', { token: f.admin }), 422, 'validation_failed', 'missing value', 'value');
  expectError(t, await getProfile(f, 'prf_doesnotexist'), 404, 'not_found', 'unknown profile id');
  expectError(t, await getProfile(other, p.id), 404, 'not_found', 'another org\'s profile');
});

t.test('lastReceivedAt of the source and the app is visible in the next read after a write', async (t) => {
  const f = await fixture();
  t.equal(f.source.lastReceivedAt, null, 'source: null before any write');
  t.equal(f.app.lastReceivedAt, null, 'app: null before any write');
  const before = Date.now();
  t.equal((await track(f, { identifiers: { anonymousId: uid('anon') }, event: 'E' })).status, 201);
  // No polling: the process that answered the write overlays the times it has not flushed yet.
  const src = await admin(f, 'GET', `/v1/sources/${f.source.id}`);
  const app = await admin(f, 'GET', `/v1/apps/${f.app.id}`);
  t.ok(isDateTime(src.body?.data?.lastReceivedAt), `source lastReceivedAt set (${src.body?.data?.lastReceivedAt})`);
  t.ok(isDateTime(app.body?.data?.lastReceivedAt), `app lastReceivedAt set (${app.body?.data?.lastReceivedAt})`);
  t.ok(Date.parse(src.body?.data?.lastReceivedAt) >= before - 1000, 'source: the write time');
  t.ok(Date.parse(app.body?.data?.lastReceivedAt) >= before - 1000, 'app: the write time');
  const listed = await admin(f, 'GET', `/v1/apps/${f.app.id}/sources`);
  t.ok(isDateTime(listed.body?.data?.find((x: any) => x.id === f.source.id)?.lastReceivedAt), 'the sources list shows it too');
  const apps = await admin(f, 'GET', `/v1/apps`);
  t.ok(isDateTime(apps.body?.data?.find((x: any) => x.id === f.app.id)?.lastReceivedAt), 'the apps list shows it too');

  // An identify also counts as a write; a second app's source moves only its own app.
  const g = await createAppFixture(s, { org: f.org });
  t.equal((await identify(g, { identifiers: { anonymousId: uid('anon') } })).status, 200);
  const gsrc = await admin(g, 'GET', `/v1/sources/${g.source.id}`);
  t.ok(isDateTime(gsrc.body?.data?.lastReceivedAt), 'identify sets the source\'s lastReceivedAt');
  const gapp = await admin(g, 'GET', `/v1/apps/${g.app.id}`);
  t.ok(isDateTime(gapp.body?.data?.lastReceivedAt), 'and the app\'s');
  t.equal((await admin(f, 'GET', `/v1/apps/${f.app.id}`)).body.data.lastReceivedAt, app.body.data.lastReceivedAt, 'the first app did not move');

  // After the once-a-second flush the stored value answers the same time. The flush is not visible
  // through the API (the overlay answers the same value), so this waits out its period.
  await new Promise((r) => setTimeout(r, 1500));
  const later = await admin(f, 'GET', `/v1/sources/${f.source.id}`);
  t.equal(later.body.data.lastReceivedAt, src.body.data.lastReceivedAt, 'flushed value equals the overlaid one');
});

// Last in the file: in embedded mode this has wedged the pipeline (see the report), and a wedged
// pipeline must not take the other tests down with it.
t.test('batch: 500 calls (the maximum) in one request', async (t) => {
  const f = await fixture();
  const anon = uid('anon');
  const max = await batch(f, Array.from({ length: 500 }, (_, i) => ({ type: 'identify', identifiers: { anonymousId: `${anon}-${i % 5}` }, traits: { i } })));
  t.equal(max.status, 200, `500 calls accepted (${max.text.slice(0, 200)})`);
  t.equal(max.body?.data?.length, 500, '500 results');
  t.ok(max.body?.data?.every((x: any) => x.status === 200), 'all 500 identified');
  const ids = new Set((max.body?.data ?? []).map((x: any) => x.data?.id));
  t.equal(ids.size, 5, 'five profiles (one per anonymousId)');
  const mixed = await batch(f, Array.from({ length: 500 }, (_, i) => (i % 2
    ? { type: 'track', identifiers: { anonymousId: `${anon}-${i % 5}` }, event: 'Bulk', messageId: `${anon}-bulk-${i}` }
    : { type: 'identify', identifiers: { anonymousId: `${anon}-${i % 5}`, userId: `${anon}-user-${i % 5}` } })));
  t.equal(mixed.status, 200, `500 mixed calls accepted (${mixed.text.slice(0, 200)})`);
  t.same([...new Set((mixed.body?.data ?? []).map((x: any) => x.status))].sort(), [200, 201], 'identify 200, track 201');
  // The 250 events may land in more than one insert: wait for a full page with more behind it.
  const ev = await poll(() => listEvents(f, { event: 'Bulk', limit: 100 }), (r) => r.status === 200 && r.body.data.length === 100 && r.body.meta.hasMore, 10_000);
  t.equal(ev.body?.data?.length, 100, 'a full page of the 250 tracked events');
  t.equal(ev.body?.meta?.hasMore, true, 'and more');
});

t.test('over-long messageIds and trait names are 422 for their call only (they would not fit an index)', async (t) => {
  const f = await fixture();
  // Random, so Postgres cannot compress it under its index-row limit.
  const long = randomBytes(1500).toString('hex');
  const at = 'x'.repeat(201);
  expectError(t, await track(f, { identifiers: { anonymousId: uid('a') }, event: 'E', messageId: long }), 422, 'validation_failed', 'track messageId of 3,000', '/data/messageId');
  expectError(t, await track(f, { identifiers: { anonymousId: uid('a') }, event: 'E', messageId: at }), 422, 'validation_failed', 'track messageId of 201', '/data/messageId');
  t.equal((await track(f, { identifiers: { anonymousId: uid('a') }, event: 'E', messageId: 'm'.repeat(200) })).status, 201, 'messageId of 200');
  expectError(t, await identify(f, { identifiers: { anonymousId: uid('a') }, messageId: long }), 422, 'validation_failed', 'identify messageId', '/data/messageId');
  expectError(t, await identify(f, { identifiers: { anonymousId: uid('a') }, traits: { [long]: 1 } }), 422, 'validation_failed', 'trait name of 3,000', '/data/traits');
  expectError(t, await identify(f, { identifiers: { anonymousId: uid('a') }, traits: { '': 1 } }), 422, 'validation_failed', 'empty trait name', '/data/traits');
  const ok = uid('a');
  const r = await batch(f, [
    { type: 'track', identifiers: { anonymousId: uid('a') }, event: 'E', messageId: long },
    { type: 'identify', identifiers: { anonymousId: uid('a') }, traits: { [long]: 1 } },
    { type: 'track', identifiers: { anonymousId: ok }, event: 'E', messageId: uid('m') },
  ]);
  t.equal(r.status, 200, r.text.slice(0, 200));
  t.same(r.body.data.map((x: any) => [x.status, x.error?.code ?? null]), [[422, 'validation_failed'], [422, 'validation_failed'], [201, null]], 'the good call of the batch is written');
});
