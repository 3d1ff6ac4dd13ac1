// Identity resolution (OpenAPI description): attaching identifiers, merging several profiles into the
// oldest (mergedInto, identifiers, traits with newer values winning, event history), never merging
// two userIds, and concurrent calls never creating two profiles for the same identifiers.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { startServer, call, clockPast, markerLanded, MARKER_EVENT, poll, createAppFixture, type AppFixture, uid, identifyCall, trackCall } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const identify = (f: AppFixture, data: Record<string, unknown>) => identifyCall(s, f, data);
const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const lookup = (f: AppFixture, kind: string, value: string) =>
  call(s.url, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`, { token: f.admin });
const getProfile = (f: AppFixture, id: string) => call(s.url, 'GET', `/v1/profiles/${id}`, { token: f.admin });
const listEvents = (f: AppFixture, qs: Record<string, string | number>) =>
  call(s.url, 'GET', `/v1/events?${new URLSearchParams(Object.entries(qs).map(([k, v]) => [k, String(v)]))}`, { token: f.admin });
const kindsOf = (p: any) => ((p?.identifiers ?? []) as any[]).map((i) => `${i.kind}=${i.value}`).sort();

/** All events of a listing, walking every page. */
async function allEvents(f: AppFixture, qs: Record<string, string | number>): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const r = await listEvents(f, cursor ? { ...qs, limit: 100, cursor } : { ...qs, limit: 100 });
    if (r.status !== 200) throw new Error(`events: ${r.status} ${r.text}`);
    out.push(...r.body.data);
    cursor = r.body.meta?.nextCursor ?? undefined;
    if (!cursor) break;
  }
  return out;
}

async function ok(t: Test, r: { status: number; text: string; body: any }, status: number, what: string) {
  t.equal(r.status, status, `${what}: ${status} (${r.text.slice(0, 200)})`);
  return r.body?.data;
}

t.test('anonymous, then identified: one profile holding both identifiers', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  const user = uid('user');
  const p1 = await ok(t, await identify(f, { identifiers: { anonymousId: anon }, traits: { seen: 1 } }), 200, 'anonymous identify');
  t.equal(p1.anonymous, true);
  const ev = await ok(t, await track(f, { identifiers: { anonymousId: anon }, event: 'Browsed' }), 201, 'anonymous track');
  t.equal(ev.profileId, p1.id);
  const p2 = await ok(t, await identify(f, { identifiers: { anonymousId: anon, userId: user }, traits: { name: 'Ann' } }), 200, 'identify with both');
  t.equal(p2.id, p1.id, 'same profile');
  t.same(kindsOf(p2), [`anonymousId=${anon}`, `userId=${user}`].sort(), 'both identifiers attached');
  t.equal(p2.anonymous, false);
  t.same(p2.traits, { seen: 1, name: 'Ann' });
  t.equal(p2.mergedInto, null);
  const ev2 = await ok(t, await track(f, { identifiers: { userId: user }, event: 'Bought' }), 201, 'track by userId');
  t.equal(ev2.profileId, p1.id, 'the userId now finds the same profile');
  const byUser = await lookup(f, 'userId', user);
  t.same(byUser.body.data.map((p: any) => p.id), [p1.id], 'lookup by userId');
  const byAnon = await lookup(f, 'anonymousId', anon);
  t.same(byAnon.body.data.map((p: any) => p.id), [p1.id], 'lookup by anonymousId');
  // A second anonymousId for a known user is attached too.
  const anon2 = uid('anon');
  const p3 = await ok(t, await identify(f, { identifiers: { anonymousId: anon2, userId: user } }), 200, 'second device');
  t.equal(p3.id, p1.id);
  t.same(kindsOf(p3), [`anonymousId=${anon}`, `anonymousId=${anon2}`, `userId=${user}`].sort(), 'three identifiers');
});

t.test('two profiles found by one call merge into the oldest', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  const email = `${uid('e')}@example.com`;
  const older = await ok(t, await identify(f, { identifiers: { anonymousId: anon }, traits: { plan: 'free', color: 'red' } }), 200, 'older profile');
  await clockPast(older.createdAt);
  const newer = await ok(t, await identify(f, { identifiers: { email }, traits: { plan: 'pro', size: 'L' } }), 200, 'newer profile');
  t.not(older.id, newer.id, 'two profiles');
  const eOld = await ok(t, await track(f, { identifiers: { anonymousId: anon }, event: 'OnOlder' }), 201, 'event on the older');
  const eNew = await ok(t, await track(f, { identifiers: { email }, event: 'OnNewer' }), 201, 'event on the newer');
  t.equal(eOld.profileId, older.id);
  t.equal(eNew.profileId, newer.id);

  const user = uid('user');
  const merged = await ok(t, await identify(f, { identifiers: { email, anonymousId: anon, userId: user } }), 200, 'identify with both');
  t.equal(merged.id, older.id, 'the survivor is the oldest profile');
  t.equal(merged.mergedInto, null);
  t.same(kindsOf(merged), [`anonymousId=${anon}`, `email=${email}`, `userId=${user}`].sort(), 'identifiers moved to the survivor, the new one attached');
  t.same(merged.traits, { plan: 'pro', color: 'red', size: 'L' }, 'traits merged; the newer value wins');
  t.equal(merged.anonymous, false);
  t.equal(merged.createdAt, older.createdAt, 'survivor keeps its createdAt');

  const gone = await getProfile(f, newer.id);
  t.equal(gone.status, 200, 'the merged-away profile is still readable');
  t.equal(gone.body.data.mergedInto, older.id, 'mergedInto = survivor');
  const surv = await getProfile(f, older.id);
  t.same(surv.body.data, merged, 'GET of the survivor answers what identify answered');
  t.same((await lookup(f, 'email', email)).body.data.map((p: any) => p.id), [older.id], 'email lookup finds the survivor');
  t.same((await lookup(f, 'anonymousId', anon)).body.data.map((p: any) => p.id), [older.id], 'anonymousId lookup finds the survivor');

  const eAfter = await ok(t, await track(f, { identifiers: { email }, event: 'AfterMerge' }), 201, 'track by the moved email');
  t.equal(eAfter.profileId, older.id, 'lands on the survivor');

  const hist = await poll(() => allEvents(f, { profileId: older.id }), (l) => l.length >= 3, 5000);
  t.same(hist.map((e) => e.id).sort(), [eOld.id, eNew.id, eAfter.id].sort(), 'survivor history includes the merged-away profile\'s events');
});

t.test('a merge moves everything and later calls for any identifier land on the survivor', async (t) => {
  const f = await createAppFixture(s);
  // Three profiles, merged by one call carrying three identifiers.
  const a = uid('anon'); const e = `${uid('e')}@example.com`; const i = uid('idp');
  const pa = await ok(t, await identify(f, { identifiers: { anonymousId: a }, traits: { k: 'a', onlyA: 1 } }), 200, 'a');
  await clockPast(pa.createdAt);
  const pe = await ok(t, await identify(f, { identifiers: { email: e }, traits: { k: 'e', onlyE: 1 } }), 200, 'e');
  await clockPast(pe.createdAt);
  const pi = await ok(t, await identify(f, { identifiers: { idpId: i }, traits: { k: 'i', onlyI: 1 } }), 200, 'i');
  const m = await ok(t, await identify(f, { identifiers: { idpId: i, email: e, anonymousId: a } }), 200, 'merge of three');
  t.equal(m.id, pa.id, 'oldest survives');
  t.same(m.traits, { k: 'i', onlyA: 1, onlyE: 1, onlyI: 1 }, 'newest value wins');
  t.equal((await getProfile(f, pe.id)).body.data.mergedInto, pa.id, 'e merged into a');
  t.equal((await getProfile(f, pi.id)).body.data.mergedInto, pa.id, 'i merged into a');
  t.same((await getProfile(f, pe.id)).body.data.identifiers, [], 'a merged-away profile keeps no identifiers');
  for (const [kind, value] of [['anonymousId', a], ['email', e], ['idpId', i]]) {
    t.same((await lookup(f, kind!, value!)).body.data.map((p: any) => p.id), [pa.id], `${kind} lookup finds the survivor`);
  }
  // Consent merges too.
  const b = uid('anon'); const c = uid('anon');
  await clockPast((await identify(f, { identifiers: { anonymousId: b }, traits: { consent: { news: true } } })).body.data.createdAt);
  await identify(f, { identifiers: { anonymousId: c }, traits: { consent: { ads: false } } });
  const bc = await ok(t, await identify(f, { identifiers: { anonymousId: c, userId: uid('u') }, traits: {} }), 200, 'c identified');
  const merged = await ok(t, await identify(f, { identifiers: { anonymousId: b, userId: bc.identifiers.find((x: any) => x.kind === 'userId').value } }), 200, 'b joins c\'s user');
  t.same(merged.consent, { news: true, ads: false }, 'consent merged');
});

t.test('profiles of two different userIds are never merged', async (t) => {
  const f = await createAppFixture(s);
  const u1 = uid('u1'); const u2 = uid('u2'); const e1 = `${uid('e1')}@example.com`;
  const p1 = await ok(t, await identify(f, { identifiers: { userId: u1, email: e1 }, traits: { who: 'one' } }), 200, 'u1 with e1');
  const p2 = await ok(t, await identify(f, { identifiers: { userId: u2 }, traits: { who: 'two' } }), 200, 'u2');
  const r = await ok(t, await identify(f, { identifiers: { userId: u2, email: e1 }, traits: { last: 'x' } }), 200, 'u2 + e1');
  t.equal(r.id, p2.id, 'lands on the profile of its userId');
  t.equal(r.mergedInto, null);
  t.equal(r.traits.who, 'two', 'u2\'s traits, not u1\'s');
  t.ok(!kindsOf(r).includes(`userId=${u1}`), 'u1 not attached to u2\'s profile');
  const g1 = (await getProfile(f, p1.id)).body.data;
  t.equal(g1.mergedInto, null, 'u1\'s profile not merged');
  t.same(g1.traits, { who: 'one' }, 'u1\'s traits untouched');
  t.ok(kindsOf(g1).includes(`userId=${u1}`), 'u1 keeps its userId');
  t.same((await lookup(f, 'userId', u1)).body.data.map((p: any) => p.id), [p1.id], 'u1 lookup');
  t.same((await lookup(f, 'userId', u2)).body.data.map((p: any) => p.id), [p2.id], 'u2 lookup');
  const byEmail = (await lookup(f, 'email', e1)).body.data;
  t.equal(byEmail.length, 1, 'one live profile holds e1');

  const ev = await ok(t, await track(f, { identifiers: { userId: u2, email: e1 }, event: 'X' }), 201, 'track u2 + e1');
  t.equal(ev.profileId, p2.id, 'track lands on u2\'s profile');
  const ev1 = await ok(t, await track(f, { identifiers: { userId: u1, email: e1 }, event: 'Y' }), 201, 'track u1 + e1');
  t.equal(ev1.profileId, p1.id, 'track lands on u1\'s profile');

  // A new userId with an email owned by another user: not merged into that user's profile.
  const u3 = uid('u3');
  const p3 = await ok(t, await identify(f, { identifiers: { userId: u3, email: e1 } }), 200, 'u3 + e1');
  t.not(p3.id, p1.id, 'not u1\'s profile');
  t.not(p3.id, p2.id, 'not u2\'s profile');
  t.same((await lookup(f, 'userId', u3)).body.data.map((p: any) => p.id), [p3.id], 'u3 has its own profile');
  t.equal((await getProfile(f, p1.id)).body.data.mergedInto, null, 'u1 still not merged');
  t.equal((await getProfile(f, p2.id)).body.data.mergedInto, null, 'u2 still not merged');

  // Anonymous profile + two userIds' profiles: the anonymous one may merge with one of them only.
  const anon = uid('anon');
  const pa = await ok(t, await identify(f, { identifiers: { anonymousId: anon } }), 200, 'anonymous');
  const r2 = await ok(t, await identify(f, { identifiers: { anonymousId: anon, userId: u1 } }), 200, 'anon + u1');
  t.equal(r2.id, p1.id, 'the anonymous profile merges into u1\'s (older)');
  t.equal((await getProfile(f, pa.id)).body.data.mergedInto, p1.id);
  const r3 = await ok(t, await identify(f, { identifiers: { anonymousId: anon, userId: u2 } }), 200, 'anon (now u1\'s) + u2');
  t.equal(r3.id, p2.id, 'lands on u2\'s profile');
  t.equal((await getProfile(f, p1.id)).body.data.mergedInto, null, 'u1 not merged into u2');
  t.equal((await getProfile(f, p2.id)).body.data.mergedInto, null, 'u2 not merged into u1');
});

t.test('profiles are scoped to the app: the same identifiers in two apps are two profiles', async (t) => {
  const a = await createAppFixture(s);
  const b = await createAppFixture(s, { org: a.org });
  const user = uid('user');
  const pa = await ok(t, await identify(a, { identifiers: { userId: user }, traits: { app: 'a' } }), 200, 'app a');
  const pb = await ok(t, await identify(b, { identifiers: { userId: user }, traits: { app: 'b' } }), 200, 'app b');
  t.not(pa.id, pb.id, 'two profiles');
  t.equal(pa.appId, a.app.id);
  t.equal(pb.appId, b.app.id);
  t.same(pa.traits, { app: 'a' }, 'app a traits untouched by app b');
  const found = await lookup(a, 'userId', user);
  t.same(found.body.data.map((p: any) => p.id).sort(), [pa.id, pb.id].sort(), 'the org-wide lookup lists the live profile of each app');
  // A second api source of app a lands on app a's profile.
  const src2 = await call(s.url, 'POST', `/v1/apps/${a.app.id}/sources`, { token: a.admin, body: { data: { kind: 'api' } } });
  const r = await call(s.url, 'POST', '/v1/identify', { token: a.key, body: { data: { sourceId: src2.body.data.id, identifiers: { userId: user } } } });
  t.equal(r.body?.data?.id, pa.id, 'every source of an app lands on the same profiles');
});

t.test('30 concurrent identifies with the same new anonymousId create one profile', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => identify(f, { identifiers: { anonymousId: anon }, traits: { [`k${i}`]: i } })));
  t.same([...new Set(rs.map((r) => r.status))], [200], 'all 200');
  t.equal(new Set(rs.map((r) => r.body?.data?.id)).size, 1, 'all the same profile');
  const l = await lookup(f, 'anonymousId', anon);
  t.equal(l.body.data.length, 1, 'one live profile');
  t.equal(Object.keys(l.body.data[0]?.traits ?? {}).length, 30, 'every call\'s trait applied');
});

t.test('200 concurrent calls over 20 users: one live profile per user, every distinct event once', async (t) => {
  const f = await createAppFixture(s);
  const run = randomBytes(4).toString('hex');
  const USERS = 20;
  const users = Array.from({ length: USERS }, (_, i) => ({ userId: `u-${run}-${i}`, anonymousId: `a-${run}-${i}` }));
  type Variant = 'identify-anon' | 'identify-both' | 'identify-user' | 'track-anon' | 'track-user' | 'track-both';
  const VARIANTS: Variant[] = ['identify-anon', 'track-anon', 'identify-both', 'track-user', 'identify-user', 'track-both', 'track-anon', 'track-both', 'identify-anon', 'track-user'];
  const calls: Array<{ user: number; variant: Variant; messageId?: string }> = [];
  for (let k = 0; k < 200; k++) {
    const user = k % USERS;
    const variant = VARIANTS[Math.floor(k / USERS) % VARIANTS.length]!;
    // Some messageIds repeat (a retried call): the event must be written once.
    const messageId = variant.startsWith('track') ? `m-${run}-${user}-${Math.floor(k / USERS) % 4}` : undefined;
    calls.push({ user, variant, messageId });
  }
  // Shuffle so that no user's calls arrive in a fixed order.
  for (let i = calls.length - 1; i > 0; i--) { const j = randomBytes(2).readUInt16BE(0) % (i + 1); [calls[i], calls[j]] = [calls[j]!, calls[i]!]; }
  const results = await Promise.all(calls.map((c) => {
    const u = users[c.user]!;
    const identifiers = c.variant.endsWith('anon') ? { anonymousId: u.anonymousId }
      : c.variant.endsWith('user') ? { userId: u.userId } : { anonymousId: u.anonymousId, userId: u.userId };
    return c.variant.startsWith('track')
      ? track(f, { identifiers, event: `ev-${c.user}`, properties: { user: c.user }, messageId: c.messageId })
      : identify(f, { identifiers, traits: { user: c.user } });
  }));
  const bad = results.map((r, i) => [r.status, calls[i]!.variant, r.text.slice(0, 200)] as const)
    .filter(([st, v]) => (v.startsWith('track') ? st !== 201 && st !== 200 : st !== 200));
  t.same(bad, [], 'every call succeeded');
  const distinct = new Set(calls.filter((c) => c.messageId).map((c) => c.messageId!));
  const fresh = results.filter((r, i) => calls[i]!.messageId && r.status === 201).length;
  t.equal(fresh, distinct.size, 'one 201 per distinct messageId');

  const live: string[] = [];
  for (let i = 0; i < USERS; i++) {
    const u = users[i]!;
    const byUser = await lookup(f, 'userId', u.userId);
    const byAnon = await lookup(f, 'anonymousId', u.anonymousId);
    t.equal(byUser.body?.data?.length, 1, `user ${i}: exactly one live profile by userId`);
    t.equal(byAnon.body?.data?.length, 1, `user ${i}: exactly one live profile by anonymousId`);
    t.equal(byAnon.body?.data?.[0]?.id, byUser.body?.data?.[0]?.id, `user ${i}: the same profile`);
    t.same(kindsOf(byUser.body?.data?.[0]), [`anonymousId=${u.anonymousId}`, `userId=${u.userId}`].sort(), `user ${i}: holds exactly its two identifiers`);
    t.equal(byUser.body?.data?.[0]?.traits?.user, i, `user ${i}: its traits`);
    live.push(byUser.body?.data?.[0]?.id);
  }
  t.equal(new Set(live).size, USERS, 'twenty distinct profiles');

  // Every profile a call answered is the user's live profile or was merged into it.
  const resolved = new Map<string, string>();
  const liveOf = async (id: string): Promise<string> => {
    if (!resolved.has(id)) {
      const p = (await getProfile(f, id)).body?.data;
      resolved.set(id, p?.mergedInto ?? p?.id);
    }
    return resolved.get(id)!;
  };
  let wrong = 0;
  for (let i = 0; i < calls.length; i++) {
    const d = results[i]!.body?.data;
    const pid = calls[i]!.variant.startsWith('track') ? d?.profileId : d?.id;
    if ((await liveOf(pid)) !== live[calls[i]!.user]) wrong++;
  }
  t.equal(wrong, 0, 'every answer belongs to its user\'s live profile');

  const events = await poll(() => allEvents(f, {}), (l) => l.length >= distinct.size, 10_000, 250);
  t.ok(await markerLanded(s, f), 'a later event landed');
  const finalEvents = (await allEvents(f, {})).filter((e) => e.event !== MARKER_EVENT);
  t.equal(finalEvents.length, distinct.size, `events = distinct track messageIds (${distinct.size}); first poll saw ${events.length}`);
  t.equal(new Set(finalEvents.map((e) => e.messageId)).size, distinct.size, 'one event per messageId');
  for (let i = 0; i < USERS; i++) {
    const mine = new Set(calls.filter((c) => c.user === i && c.messageId).map((c) => c.messageId));
    const hist = await allEvents(f, { profileId: live[i]! });
    t.same(hist.map((e) => e.messageId).sort(), [...mine].sort(), `user ${i}: history holds its events, merged profiles included`);
  }
});
