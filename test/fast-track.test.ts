// Track calls of known profiles (embedded: the fast path, pipeline/fast-track.ts, which decides
// with what the process cached) answer exactly what the general path answers when what they were
// decided with changed in between: a merge moving identifiers, a replayed messageId, a denied
// event, strict policy, a new segment watching the event, an archived source. The same behaviour
// is asserted in every mode; in embedded mode the second call of each profile takes the fast path.
import t, { type Test } from 'tap';
import pg from 'pg';
import { adminCall, batchCall, startServer, createAppFixture, expectError, markerLanded, metric, poll, until, uid, identifyCall, trackCall, type AppFixture } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const track = (f: AppFixture, data: Record<string, unknown>) => trackCall(s, f, data);
const identify = (f: AppFixture, data: Record<string, unknown>) => identifyCall(s, f, data);
const admin = (f: AppFixture, method: string, path: string, data?: unknown) => adminCall(s, f, method, path, data);
const batch = (f: AppFixture, calls: unknown[]) => batchCall(s, f, calls);

/** Two calls per identifier set: the first teaches the process the owner, the second uses it. */
async function known(t: Test, f: AppFixture, identifiers: Record<string, string>): Promise<string> {
  const a = await track(f, { identifiers, event: 'Seen' });
  t.equal(a.status, 201, 'first track');
  const b = await track(f, { identifiers, event: 'Seen' });
  t.equal(b.status, 201, 'second track');
  t.equal(b.body.data.profileId, a.body.data.profileId, 'same profile');
  return a.body.data.profileId;
}

t.test('after a merge, the merged-away profile\'s identifiers land on the survivor', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon'), email = `${uid('e')}@example.com`;
  const older = await known(t, f, { anonymousId: anon });
  const newer = await known(t, f, { email });
  t.not(older, newer);
  const merged = await identify(f, { identifiers: { anonymousId: anon, email } });
  t.equal(merged.status, 200);
  t.equal(merged.body.data.id, older, 'merged into the oldest');
  const byEmail = await track(f, { identifiers: { email }, event: 'After merge' });
  t.equal(byEmail.status, 201);
  t.equal(byEmail.body.data.profileId, older, 'the email now belongs to the survivor');
  const byAnon = await track(f, { identifiers: { anonymousId: anon }, event: 'After merge' });
  t.equal(byAnon.body.data.profileId, older);
  // And again, now that the process learned the new owners.
  t.equal((await track(f, { identifiers: { email }, event: 'Later' })).body.data.profileId, older);
  const gone = await admin(f, 'GET', `/v1/profiles/${newer}`);
  t.equal(gone.body.data?.mergedInto, older, 'the other profile points at the survivor');
});

t.test('replays of known profiles answer the original, alone and beside new calls', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const m = uid('m');
  const first = await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m, properties: { n: 1 } });
  t.equal(first.status, 201);
  const again = await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m, properties: { n: 2 } });
  t.equal(again.status, 200, 'a replay answers 200');
  t.same(again.body.data, first.body.data, 'with the original event');
  const m2 = uid('m');
  const b = await batch(f, [
    { type: 'track', identifiers: { userId: user }, event: 'Bought', messageId: m },
    { type: 'track', identifiers: { userId: user }, event: 'Viewed', messageId: m2 },
  ]);
  t.same(b.body.data.map((x: any) => x.status), [200, 201]);
  t.same(b.body.data[0].data, first.body.data);
  t.equal(b.body.data[1].data.profileId, profile);
  const evs = await poll(() => admin(f, 'GET', `/v1/events?profileId=${profile}&limit=100`), (r) => (r.body?.data?.length ?? 0) >= 4);
  const ids = (evs.body.data as any[]).map((e) => e.messageId);
  t.equal(ids.filter((x) => x === m).length, 1, 'the replayed event is stored once');
  t.equal(ids.filter((x) => x === m2).length, 1);
});

t.test('an event denied after the profile is known is refused, and nothing is written', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  await known(t, f, { userId: user });
  t.equal((await admin(f, 'POST', '/v1/catalog/events', { name: 'Forbidden' })).status, 201);
  t.equal((await admin(f, 'POST', '/v1/catalog/events/Forbidden/state', { state: 'denied' })).status, 200);
  const m = uid('m');
  expectError(t, await track(f, { identifiers: { userId: user }, event: 'Forbidden', messageId: m }), 422, 'event_denied', 'denied');
  // The messageId was not taken.
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Allowed', messageId: m })).status, 201);
});

t.test('strict policy set after the profile is known holds unknown events', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  await known(t, f, { userId: user });
  t.equal((await admin(f, 'PATCH', '/v1/settings', { ingestionPolicy: 'strict' })).status, 200);
  const r = await track(f, { identifiers: { userId: user }, event: 'Brand new' });
  t.equal(r.status, 200);
  t.same(r.body.data, { status: 'quarantined' });
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Seen' })).status, 201, 'a known event still goes through');
});

t.test('a segment created after the profile is known sees its next event', async (t) => {
  const f = await createAppFixture(s);
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const seg = await admin(f, 'POST', '/v1/segments', { name: 'buyers', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed', atLeast: 1 }] } });
  t.equal(seg.status, 201, seg.text.slice(0, 300));
  t.equal(seg.body.data.memberCount, 0);
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  const m = await admin(f, 'GET', `/v1/segments/${seg.body.data.id}/members`);
  t.same((m.body.data as any[]).map((x) => x.profileId), [profile], 'a member as soon as the call is answered');
});

t.test('a source archived after the profile is known refuses its calls', async (t) => {
  const f = await createAppFixture(s);
  const anon = uid('anon');
  await known(t, f, { anonymousId: anon });
  t.equal((await admin(f, 'DELETE', `/v1/sources/${f.source.id}`)).status, 200);
  expectError(t, await track(f, { identifiers: { anonymousId: anon }, event: 'Seen' }), 403, 'forbidden', 'archived source');
});

t.test('segments are decided on known profiles: counts across calls, one entry, replays count once', async (t) => {
  const f = await createAppFixture(s);
  const seg = await admin(f, 'POST', '/v1/segments', { name: 'thrice', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed', atLeast: 3 }] } });
  t.equal(seg.status, 201);
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const members = async () => ((await admin(f, 'GET', `/v1/segments/${seg.body.data.id}/members`)).body.data as any[]).map((x) => x.profileId);
  const m = uid('m');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m })).status, 201);
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought', messageId: m })).status, 200, 'a replay');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(), [], 'two purchases (the replay does not count)');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(), [profile], 'the third: a member');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(), [profile], 'still a member');
  const entered = () => admin(f, 'GET', `/v1/events?profileId=${profile}&event=system.segment_entered&limit=100`);
  await poll(entered, (r) => (r.body?.data?.length ?? 0) >= 1, 10_000);
  // Every stored system event published, then a later event (of an org of its own) landed: a second
  // entry event would have landed before it.
  t.ok(await until(async () => await metric(s, 'headwater_backlog', { kind: 'outbox' }) === 0, 10_000, 50), 'the system-event outbox is empty');
  t.ok(await markerLanded(s, await createAppFixture(s)), 'a later event landed');
  t.equal((await entered()).body.data.length, 1, 'one entry event');
});

t.test('a transition that cascades on known profiles: every round decided in the same write', async (t) => {
  const f = await createAppFixture(s);
  const buyer = (await admin(f, 'POST', '/v1/segments', { name: 'buyer', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed' }] } })).body.data;
  const ever = (await admin(f, 'POST', '/v1/segments', { name: 'ever entered', definition: { predicates: [{ kind: 'event', name: 'system.segment_entered', op: 'performed' }] } })).body.data;
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  const members = async (id: string) => ((await admin(f, 'GET', `/v1/segments/${id}/members`)).body.data as any[]).map((x) => x.profileId);
  t.same(await members(ever.id), [], 'not yet');
  t.equal((await track(f, { identifiers: { userId: user }, event: 'Bought' })).status, 201);
  t.same(await members(buyer.id), [profile], 'entered buyer');
  t.same(await members(ever.id), [profile], 'and, from that entry, "ever entered", before the answer');
});

/** Rows of one SQL text on the server's store (embedded: its socket), as another client would read them. */
async function storeRows(text: string): Promise<any[]> {
  const c = new pg.Client(s.databaseUrl ? { connectionString: s.databaseUrl } : { host: `${s.dataDir}/run`, port: 5432, user: 'postgres', database: 'postgres' });
  await c.connect();
  try { return (await c.query(text)).rows; } finally { await c.end(); }
}

t.test('a transition whose writes do not all apply commits nothing of its batch, which is decided again', { skip: !s.dataDir && !s.databaseUrl && 'needs the store' }, async (t) => {
  const f = await createAppFixture(s);
  const buyer = (await admin(f, 'POST', '/v1/segments', { name: 'buyer', definition: { predicates: [{ kind: 'event', name: 'Bought', op: 'performed' }] } })).body.data;
  const user = uid('user');
  const profile = await known(t, f, { userId: user });
  // The first membership row written for this profile is dropped by a trigger, once (a sequence is
  // not rolled back). The fast path's transition sends its COMMIT in the same round trip as its
  // writes: its check must fail the transaction before that COMMIT runs.
  const tag = `skip_${uid('x').replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
  await storeSql(`CREATE SEQUENCE ${tag}_seq;
    CREATE FUNCTION ${tag}_fn() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.profile_id = '${profile}' AND nextval('${tag}_seq') = 1 THEN RETURN NULL; END IF; RETURN NEW; END $$;
    CREATE TRIGGER ${tag}_tr BEFORE INSERT ON segment_members FOR EACH ROW EXECUTE FUNCTION ${tag}_fn()`);
  t.teardown(() => storeSql(`DROP TRIGGER ${tag}_tr ON segment_members; DROP FUNCTION ${tag}_fn(); DROP SEQUENCE ${tag}_seq`));
  const r = await track(f, { identifiers: { userId: user }, event: 'Bought' });
  t.equal(r.status, 201, 'answered as a stored event, not as a replay of a half-committed one');
  t.ok(Number((await storeRows(`SELECT last_value FROM ${tag}_seq`))[0].last_value) >= 2, 'the first attempt was refused and the call decided again');
  t.same(((await admin(f, 'GET', `/v1/segments/${buyer.id}/members`)).body.data as any[]).map((x) => x.profileId), [profile], 'a member');
  const entered = () => admin(f, 'GET', `/v1/events?profileId=${profile}&event=system.segment_entered&limit=100`);
  await poll(entered, (x) => (x.body?.data?.length ?? 0) >= 1, 10_000);
  const bought = () => admin(f, 'GET', `/v1/events?profileId=${profile}&event=Bought&limit=100`);
  await poll(bought, (x) => (x.body?.data?.length ?? 0) >= 1, 10_000);
  t.ok(await until(async () => await metric(s, 'headwater_backlog', { kind: 'outbox' }) === 0, 10_000, 50), 'the system-event outbox is empty');
  t.ok(await markerLanded(s, await createAppFixture(s)), 'a later event landed');
  t.equal((await entered()).body.data.length, 1, 'one entry event');
  t.equal((await bought()).body.data.length, 1, 'the event stored once');
});

t.test('tracks racing a merge: every event lands on the survivor, once', async (t) => {
  // Against a Postgres server the fast path runs beside the merge (other worker threads): the
  // merge must see, and move, the history a concurrent fast write adds to the profile it folds.
  const f = await createAppFixture(s);
  const anon = uid('anon'), email = `${uid('e')}@example.com`;
  const older = await known(t, f, { anonymousId: anon });
  await known(t, f, { email });
  // Every worker thread learns both owners (calls spread over the threads).
  const teach = await Promise.all(Array.from({ length: 8 }, (_, i) => track(f, { identifiers: i % 2 ? { anonymousId: anon } : { email }, event: 'Seen' })));
  t.same(teach.map((r) => r.status), Array(8).fill(201));
  // Waves of tracks on both profiles, so that several batches run at once, with the merge inside.
  const waves = 8, perWave = 6;
  const pending: Array<Promise<{ status: number }>> = [];
  for (let w = 0; w < waves; w++) {
    for (let i = 0; i < perWave; i++) pending.push(track(f, { identifiers: i % 2 ? { anonymousId: anon } : { email }, event: 'Race' }));
    if (w === waves / 2) pending.push(identify(f, { identifiers: { anonymousId: anon, email } }));
    await new Promise((r) => setTimeout(r, 3)); // pacing, not a wait: the waves overlap in the workers
  }
  const statuses = (await Promise.all(pending)).map((r) => r.status);
  t.equal(statuses.filter((x) => x === 201).length, waves * perWave, `every track written (statuses ${statuses.join(' ')})`);
  t.equal(statuses.filter((x) => x === 200).length, 1, 'the merge answered');
  // A segment created now decides on the stored history: the survivor holds every Race event.
  const seg = (atLeast: number) => admin(f, 'POST', '/v1/segments', { name: `race-${atLeast}`, definition: { predicates: [{ kind: 'event', name: 'Race', op: 'performed', atLeast }] } });
  const all = await seg(waves * perWave);
  t.equal(all.status, 201);
  t.equal(all.body.data.memberCount, 1, 'the survivor counts all of them');
  const members = await admin(f, 'GET', `/v1/segments/${all.body.data.id}/members`);
  t.same((members.body.data as any[]).map((x) => x.profileId), [older]);
  t.equal((await seg(waves * perWave + 1)).body.data.memberCount, 0, 'and none twice');
});

t.test('a track waits while another transaction holds its profile, as a merge does', { skip: !process.env.DATABASE_URL && 'needs a Postgres server' }, async (t) => {
  // Why the race above cannot lose history: a merge locks every profile it folds before it moves
  // identifiers or history, and the fast path locks its profiles before it checks anything.
  const f = await createAppFixture(s);
  const email = `${uid('e')}@example.com`;
  const profile = await known(t, f, { email });
  await Promise.all(Array.from({ length: 6 }, () => track(f, { identifiers: { email }, event: 'Seen' })));
  const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT 1 FROM profiles WHERE id = $1 FOR UPDATE', [profile]);
    let answered = false;
    const held = Promise.all(Array.from({ length: 4 }, () => track(f, { identifiers: { email }, event: 'Held' }))).then((r) => { answered = true; return r; });
    // Positive signal first: a track waits for this transaction (pg_locks is read live, unlike pg_stat_activity).
    const waiting = () => c.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted AND transactionid = pg_current_xact_id()::text::xid`);
    t.ok(await until(async () => (await waiting()).rows[0].n > 0, 10_000, 20), 'a track waits for the lock');
    t.notOk(answered, 'not answered while the profile is held');
    await c.query('COMMIT');
    t.same((await held).map((r) => r.status), [201, 201, 201, 201], 'answered once it is free');
  } finally {
    await c.query('ROLLBACK').catch(() => {});
    await c.end();
  }
});

// First-seen identifiers: the fast path writes the new profile with the calls (one statement);
// what it must not do is create a profile for an identifier someone owns, or for a replay.
const profileBy = async (f: AppFixture, kind: string, value: string) =>
  ((await admin(f, 'GET', `/v1/profiles?kind=${kind}&value=${encodeURIComponent(value)}`)).body.data as any[]);
const trackOf = (identifiers: Record<string, string>, event: string, extra: Record<string, unknown> = {}) =>
  ({ type: 'track', identifiers, event, messageId: uid('m'), ...extra });

t.test('a batch of first-seen users: one new profile per user, with its identifiers, decided by segments', async (t) => {
  const f = await createAppFixture(s);
  const seg = await admin(f, 'POST', '/v1/segments', { name: 'signed', definition: { predicates: [{ kind: 'event', name: 'Signed Up', op: 'performed', atLeast: 1 }] } });
  t.equal(seg.status, 201);
  await known(t, f, { userId: uid('warm') }); // the process learns the org (and the new segment)
  const [u1, u2, u3, u4] = [uid('u1'), uid('u2'), uid('u3'), uid('u4')];
  const anon = uid('anon');
  const r = await batch(f, [
    trackOf({ userId: u1 }, 'Signed Up'), trackOf({ userId: u2, anonymousId: anon }, 'Signed Up'),
    trackOf({ userId: u1 }, 'Viewed'), trackOf({ userId: u3 }, 'Viewed'), trackOf({ userId: u4 }, 'Signed Up'),
  ]);
  t.equal(r.status, 200, r.text.slice(0, 300));
  const out = r.body.data as any[];
  t.same(out.map((x) => x.status), [201, 201, 201, 201, 201]);
  const ids = out.map((x) => x.data.profileId);
  t.equal(ids[0], ids[2], 'one user, one profile');
  t.equal(new Set(ids).size, 4, 'four users, four profiles');
  for (const [i, user] of [[0, u1], [1, u2], [3, u3], [4, u4]] as const) {
    const found = await profileBy(f, 'userId', user);
    t.same(found.map((p) => p.id), [ids[i]], `${user} owns its profile`);
    t.equal(found[0].createdAt, out[i].data.receivedAt, 'born with its first call');
  }
  const p2 = (await profileBy(f, 'anonymousId', anon))[0];
  t.equal(p2?.id, ids[1], 'both identifiers of a call attached');
  t.same((p2.identifiers as any[]).map((x) => x.kind).sort(), ['anonymousId', 'userId']);
  const members = ((await admin(f, 'GET', `/v1/segments/${seg.body.data.id}/members`)).body.data as any[]).map((x) => x.profileId).sort();
  t.same(members, [ids[0], ids[1], ids[4]].sort(), 'new profiles are decided as the call is answered');
  // Later calls (this process now knows the owners) land on the same profiles.
  const again = await batch(f, [trackOf({ userId: u3 }, 'Viewed'), trackOf({ anonymousId: anon }, 'Viewed')]);
  t.same((again.body.data as any[]).map((x) => x.data.profileId), [ids[3], ids[1]]);
});

/** Runs one SQL text on the server's store (embedded: its socket), as another writer would. */
async function storeSql(text: string): Promise<void> {
  const c = new pg.Client(s.databaseUrl ? { connectionString: s.databaseUrl } : { host: `${s.dataDir}/run`, port: 5432, user: 'postgres', database: 'postgres' });
  await c.connect();
  try { await c.query(text); } finally { await c.end(); }
}

t.test('an identifier owned already but unknown to the process: its calls land on its owner', { skip: !s.dataDir && !s.databaseUrl && 'needs the store' }, async (t) => {
  const f = await createAppFixture(s);
  await known(t, f, { userId: uid('warm') });
  const owned = uid('owned'), fresh = uid('fresh');
  const profile = `prf_${uid('x').replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
  const lit = (v: string) => `'${v.replace(/'/g, "''")}'`;
  // Written beside the service (one statement): the process has never seen this identifier.
  await storeSql(`WITH p AS (INSERT INTO profiles (id, org_id, app_id, source_id, environment, traits, consent, created_at, updated_at)
      VALUES (${lit(profile)}, ${lit(f.org.org.id)}, ${lit(f.app.id)}, ${lit(f.source.id)}, ${lit(f.source.environment ?? f.app.environment ?? 'production')}, '{}', '{}', now(), now()) RETURNING id)
    INSERT INTO identifiers (org_id, app_id, kind, value, profile_id, created_at) SELECT ${lit(f.org.org.id)}, ${lit(f.app.id)}, 'userId', ${lit(owned)}, id, now() FROM p`);
  const r = await batch(f, [trackOf({ userId: owned }, 'Viewed'), trackOf({ userId: fresh }, 'Viewed')]);
  t.equal(r.status, 200, r.text.slice(0, 300));
  const out = r.body.data as any[];
  t.same(out.map((x) => x.status), [201, 201]);
  t.equal(out[0].data.profileId, profile, 'the owner, not a new profile');
  t.not(out[1].data.profileId, profile, 'a first-seen user still gets its own');
  t.same((await profileBy(f, 'userId', owned)).map((p) => p.id), [profile]);
  t.same((await profileBy(f, 'userId', fresh)).map((p) => p.id), [out[1].data.profileId]);
  const again = await batch(f, [trackOf({ userId: owned }, 'Viewed')]);
  t.equal((again.body.data as any[])[0].data.profileId, profile, 'and again, now known');
});

t.test('a first-seen user whose messageId was stored before answers the original and gets no profile', async (t) => {
  const f = await createAppFixture(s);
  await known(t, f, { userId: uid('warm') });
  const m = uid('m');
  const first = await track(f, { identifiers: { userId: uid('first') }, event: 'Bought', messageId: m });
  t.equal(first.status, 201);
  const other = uid('other'), third = uid('third');
  const r = await batch(f, [trackOf({ userId: other }, 'Bought', { messageId: m }), trackOf({ userId: third }, 'Bought')]);
  const out = r.body.data as any[];
  t.equal(out[0].status, 200, 'a replay');
  t.same(out[0].data, first.body.data, 'answers the original event');
  t.same(await profileBy(f, 'userId', other), [], 'no profile for the replayed call');
  t.equal(out[1].status, 201);
  t.same((await profileBy(f, 'userId', third)).map((p) => p.id), [out[1].data.profileId]);
});

t.test('batches racing to create the same users: one profile per user, every event on it', async (t) => {
  const f = await createAppFixture(s);
  await Promise.all(Array.from({ length: 8 }, () => known(t, f, { userId: uid('warm') })));
  const users = Array.from({ length: 6 }, () => uid('racer'));
  const rounds = 8;
  const answers = await Promise.all(Array.from({ length: rounds }, (_, k) =>
    batch(f, users.map((u, i) => trackOf({ userId: u }, 'Raced', { properties: { k, i } })))));
  t.same(answers.map((r) => r.status), Array(rounds).fill(200));
  for (const [i, u] of users.entries()) {
    const owners = await profileBy(f, 'userId', u);
    t.equal(owners.length, 1, `${u}: one profile`);
    const landed = new Set(answers.map((r) => (r.body.data as any[])[i].data.profileId));
    t.same([...landed], [owners[0].id], `${u}: every event on it`);
  }
});
