// Catalog, quarantine and settings (OpenAPI document: "Catalog", States): every
// catalog route over HTTP, then the governance store functions against the same database.
import t from 'tap';
import { join } from 'node:path';
import pg from 'pg';
import { startServer, call, clockPast, createOrg, expectError, type OrgCreds } from './helpers/server.js';
import {
  SnapshotCache, collectObservations, deny, holdCalls, loadSnapshot, observe, promote,
} from '../pipeline/governance/mod.js';
import { catalogRoutes } from '../api/routes/catalog.js';
import type { Deps } from '../api/routes/deps.js';
import type { CallResult, IngestCall } from '../pipeline/types.js';

const s = await startServer();
t.teardown(() => s.close());

const isDateTime = (v: unknown) => typeof v === 'string' && !Number.isNaN(Date.parse(v)) && /T.*(Z|[+-]\d\d:\d\d)$/.test(v);
const EVENT_FIELDS = ['createdAt', 'name', 'orgId', 'properties', 'state', 'updatedAt'];
const TRAIT_FIELDS = ['createdAt', 'name', 'orgId', 'state', 'type', 'updatedAt'];

const as = (token: string) => (method: string, path: string, data?: unknown) =>
  call(s.url, method, path, { token, body: data === undefined ? undefined : { data } });
const enc = encodeURIComponent;

const org = await createOrg(s);
const admin = as(org.sessions.admin);
const member = as(org.sessions.member);

t.test('register, fetch and conflict: events', async (t) => {
  const r = await admin('POST', '/v1/catalog/events', { name: 'Order Completed', properties: { total: 'number', items: 'array<object>' } });
  t.equal(r.status, 201);
  const e = r.body.data;
  t.same(Object.keys(e).sort(), EVENT_FIELDS, 'exactly the Catalog event fields');
  t.equal(e.orgId, org.org.id);
  t.equal(e.name, 'Order Completed');
  t.same(e.properties, { total: 'number', items: 'array<object>' });
  t.equal(e.state, 'allowed', 'a registered name is allowed');
  t.ok(isDateTime(e.createdAt) && isDateTime(e.updatedAt), 'timestamps are date-times');
  t.equal(r.body.meta.requestId, r.headers.get('x-request-id'));

  const bare = await admin('POST', '/v1/catalog/events', { name: 'Signed Up' });
  t.equal(bare.status, 201);
  t.same(bare.body.data.properties, {}, 'properties default to {}');

  expectError(t, await admin('POST', '/v1/catalog/events', { name: 'Order Completed' }), 409, 'conflict', 'existing name');
  expectError(t, await admin('POST', '/v1/catalog/events', { name: 'Order Completed', properties: { x: 'string' } }), 409, 'conflict', 'existing name, other body');
  const got = await member('GET', `/v1/catalog/events/${enc('Order Completed')}`);
  t.equal(got.status, 200, 'member reads');
  t.same(got.body.data, e, 'the conflict changed nothing');
  t.equal((await admin('POST', '/v1/catalog/events', { name: 'order completed' })).status, 201, 'names are case-sensitive');

  const odd = 'a/b?c#d %e ü ✓';
  t.equal((await admin('POST', '/v1/catalog/events', { name: odd })).status, 201);
  t.equal((await admin('GET', `/v1/catalog/events/${enc(odd)}`)).body.data?.name, odd, 'any characters round-trip through the path');
  t.equal((await admin('POST', '/v1/catalog/events', { name: 'x'.repeat(200) })).status, 201, '200 characters');
  t.equal((await admin('GET', `/v1/catalog/events/${'x'.repeat(200)}`)).status, 200);

  const bad: Array<[string, unknown, string]> = [
    ['name missing', {}, '/data/name'], ['name empty', { name: '' }, '/data/name'], ['name 201', { name: 'y'.repeat(201) }, '/data/name'],
    ['name a number', { name: 5 }, '/data/name'], ['unknown type name', { name: 'Z', properties: { a: 'integer' } }, '/data/properties/a'],
    ['properties not an object', { name: 'Z', properties: ['string'] }, '/data/properties'],
  ];
  for (const [label, data, field] of bad) expectError(t, await admin('POST', '/v1/catalog/events', data), 422, 'validation_failed', label, field);
  expectError(t, await member('POST', '/v1/catalog/events', { name: 'By Member' }), 403, 'forbidden', 'member registers');
  expectError(t, await admin('GET', '/v1/catalog/events/By%20Member'), 404, 'not_found', 'nothing was registered by the member');
  expectError(t, await admin('GET', '/v1/catalog/events/Nope'), 404, 'not_found', 'unknown name');
  expectError(t, await admin('GET', `/v1/catalog/events/${'x'.repeat(201)}`), 422, 'validation_failed', 'name over 200 in the path');
  expectError(t, await call(s.url, 'GET', '/v1/catalog/events', { token: org.apiKey }), 401, 'invalid_key', 'API key on the dashboard');
});

t.test('register, fetch and conflict: traits', async (t) => {
  const r = await admin('POST', '/v1/catalog/traits', { name: 'plan', type: 'string' });
  t.equal(r.status, 201);
  t.same(Object.keys(r.body.data).sort(), TRAIT_FIELDS, 'exactly the Catalog trait fields');
  t.same([r.body.data.name, r.body.data.type, r.body.data.state, r.body.data.orgId], ['plan', 'string', 'allowed', org.org.id]);
  for (const type of ['number', 'boolean', 'object', 'array<any>', 'array<string>', 'array<number>', 'array<boolean>', 'array<object>']) {
    const x = await admin('POST', '/v1/catalog/traits', { name: `t-${type}`, type });
    t.equal(x.body.data?.type, type, `type ${type}`);
  }
  expectError(t, await admin('POST', '/v1/catalog/traits', { name: 'plan', type: 'number' }), 409, 'conflict', 'existing trait');
  t.equal((await admin('GET', '/v1/catalog/traits/plan')).body.data.type, 'string', 'unchanged by the conflict');
  const bad: Array<[string, unknown, string]> = [
    ['type missing', { name: 'q' }, '/data/type'], ['name missing', { type: 'string' }, '/data/name'],
    ['bad type', { name: 'q', type: 'array' }, '/data/type'], ['empty name', { name: '', type: 'string' }, '/data/name'],
  ];
  for (const [label, data, field] of bad) expectError(t, await admin('POST', '/v1/catalog/traits', data), 422, 'validation_failed', label, field);
  expectError(t, await member('POST', '/v1/catalog/traits', { name: 'm', type: 'string' }), 403, 'forbidden', 'member registers a trait');
  t.equal((await member('GET', '/v1/catalog/traits/plan')).status, 200, 'member reads a trait');
  expectError(t, await admin('GET', '/v1/catalog/traits/nope'), 404, 'not_found', 'unknown trait');
});

t.test('other orgs see nothing', async (t) => {
  const other = await createOrg(s);
  const them = as(other.sessions.admin);
  await them('POST', '/v1/catalog/events', { name: 'Their Event' });
  await them('POST', '/v1/catalog/traits', { name: 'theirTrait', type: 'number' });
  expectError(t, await admin('GET', '/v1/catalog/events/Their%20Event'), 404, 'not_found', 'GET event of another org');
  expectError(t, await admin('PATCH', '/v1/catalog/events/Their%20Event', { properties: {} }), 404, 'not_found', 'PATCH event of another org');
  expectError(t, await admin('POST', '/v1/catalog/events/Their%20Event/state', { state: 'denied' }), 404, 'not_found', 'state of another org\'s event');
  expectError(t, await admin('GET', '/v1/catalog/traits/theirTrait'), 404, 'not_found', 'GET trait of another org');
  expectError(t, await admin('PATCH', '/v1/catalog/traits/theirTrait', { type: 'string' }), 404, 'not_found', 'PATCH trait of another org');
  expectError(t, await admin('POST', '/v1/catalog/traits/theirTrait/state', { state: 'denied' }), 404, 'not_found', 'state of another org\'s trait');
  t.equal((await them('GET', '/v1/catalog/events/Their%20Event')).body.data.state, 'allowed', 'theirs is untouched');
  t.notOk((await admin('GET', '/v1/catalog/events?limit=100')).body.data.some((e: any) => e.name === 'Their Event'), 'not listed for us');
  t.equal((await admin('POST', '/v1/catalog/events', { name: 'Their Event' })).status, 201, 'names are per org');
  t.same((await them('GET', '/v1/catalog/events')).body.data.map((e: any) => e.name), ['Their Event'], 'their list has only theirs');
});

async function walk(t: any, list: (qs: string) => Promise<any>, qs: string, limit: number) {
  const names: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r: any = await list(`?limit=${limit}${qs}${cursor ? `&cursor=${enc(cursor)}` : ''}`);
    t.equal(r.status, 200);
    t.ok(r.body.data.length <= limit, 'page within limit');
    names.push(...r.body.data.map((x: any) => x.name));
    t.equal(r.body.meta.nextCursor === null, !r.body.meta.hasMore, 'nextCursor null exactly on the last page');
    cursor = r.body.meta.nextCursor;
  } while (cursor && ++pages < 50);
  return names;
}

t.test('list: name order, pagination, q and state', async (t) => {
  const o = await createOrg(s);
  const a = as(o.sessions.admin);
  const m = as(o.sessions.member);
  const names = ['checkout_started', 'checkoutXstarted', 'Checkout Completed', '100%_done', 'zeta', 'Alpha', 'beta', 'a\\b', 'ÜBER checkout'];
  for (const name of names) t.equal((await a('POST', '/v1/catalog/events', { name })).status, 201, `register ${name}`);
  await a('POST', '/v1/catalog/events/zeta/state', { state: 'denied' });
  await a('POST', '/v1/catalog/events/beta/state', { state: 'denied' });
  const sorted = [...names].sort((x, y) => (Buffer.compare(Buffer.from(x), Buffer.from(y))));

  const all = await m('GET', '/v1/catalog/events');
  t.same(all.body.data.map((e: any) => e.name), sorted, 'one page, by name ascending (byte order), member can list');
  t.same([all.body.meta.hasMore, all.body.meta.nextCursor], [false, null]);
  for (const e of all.body.data) t.same(Object.keys(e).sort(), EVENT_FIELDS, `${e.name}: list items are Catalog events`);
  for (const limit of [1, 2, 4]) t.same(await walk(t, (qs) => m('GET', `/v1/catalog/events${qs}`), '', limit), sorted, `pages of ${limit} walk every name once, in order`);

  const q = async (qs: string) => (await a('GET', `/v1/catalog/events${qs}`)).body.data.map((e: any) => e.name);
  t.same(await q('?q=checkout_'), ['checkout_started'], '_ is literal');
  t.same(await q('?q=%25'), ['100%_done'], '% is literal');
  t.same(await q(`?q=${enc('\\')}`), ['a\\b'], 'backslash is literal');
  t.same(await q('?q=CHECKOUT'), ['Checkout Completed', 'checkoutXstarted', 'checkout_started', 'ÜBER checkout'].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))), 'case-insensitive substring');
  t.same(await q(`?q=${enc('über')}`), ['ÜBER checkout'], 'non-ASCII letters fold too');
  t.same(await q('?q='), sorted, 'empty q matches everything');
  t.same(await q('?q=nomatch'), [], 'no match');
  t.same(await q('?state=denied'), ['beta', 'zeta'], 'state=denied');
  t.same(await q('?state=allowed'), sorted.filter((n) => n !== 'beta' && n !== 'zeta'), 'state=allowed');
  t.same(await q('?state=denied&q=ZET'), ['zeta'], 'q and state together');
  t.same(await walk(t, (qs) => a('GET', `/v1/catalog/events${qs}`), '&q=checkout', 1), await q('?q=checkout'), 'filtered pages walk the filtered set');

  for (const [label, qs, field] of [['q 201 chars', `?q=${'a'.repeat(201)}`, '/q'], ['bad state', '?state=quarantined', '/state'], ['limit 0', '?limit=0', '/limit'], ['limit 101', '?limit=101', '/limit']]) {
    expectError(t, await a('GET', `/v1/catalog/events${qs}`), 422, 'validation_failed', label!, field);
  }
  expectError(t, await a('GET', '/v1/catalog/events?cursor=!!!'), 422, 'validation_failed', 'garbage cursor', '/cursor');
  t.equal((await a('GET', `/v1/catalog/events?q=${'a'.repeat(200)}`)).status, 200, 'q of 200 characters');

  for (const [name, type] of [['b', 'string'], ['A', 'number'], ['c_x', 'boolean'], ['cXx', 'object']]) await a('POST', '/v1/catalog/traits', { name, type });
  await a('POST', '/v1/catalog/traits/b/state', { state: 'denied' });
  t.same(await walk(t, (qs) => m('GET', `/v1/catalog/traits${qs}`), '', 1), ['A', 'b', 'cXx', 'c_x'], 'traits paginate by name');
  t.same((await a('GET', '/v1/catalog/traits?q=c_')).body.data.map((x: any) => x.name), ['c_x'], 'trait q escapes wildcards');
  t.same((await a('GET', '/v1/catalog/traits?state=denied')).body.data.map((x: any) => x.name), ['b'], 'trait state filter');
  t.same(Object.keys((await a('GET', '/v1/catalog/traits')).body.data[0]).sort(), TRAIT_FIELDS, 'trait list items are Catalog traits');
});

t.test('PATCH and state transitions', async (t) => {
  await admin('POST', '/v1/catalog/events', { name: 'Patched', properties: { a: 'string', b: 'number' } });
  const before = (await admin('GET', '/v1/catalog/events/Patched')).body.data;
  await clockPast(before.updatedAt);
  const p = await admin('PATCH', '/v1/catalog/events/Patched', { properties: { c: 'array<string>' } });
  t.equal(p.status, 200);
  t.same(p.body.data.properties, { c: 'array<string>' }, 'PATCH replaces the property map');
  t.equal(p.body.data.createdAt, before.createdAt, 'createdAt kept');
  t.ok(Date.parse(p.body.data.updatedAt) > Date.parse(before.updatedAt), 'updatedAt moves');
  t.same((await admin('GET', '/v1/catalog/events/Patched')).body.data, p.body.data, 'persisted');
  t.same((await admin('PATCH', '/v1/catalog/events/Patched', { properties: {} })).body.data.properties, {}, 'PATCH to empty');
  expectError(t, await admin('PATCH', '/v1/catalog/events/Patched', {}), 422, 'validation_failed', 'properties missing', '/data/properties');
  expectError(t, await admin('PATCH', '/v1/catalog/events/Patched', { properties: { a: 'text' } }), 422, 'validation_failed', 'bad type', '/data/properties/a');
  expectError(t, await admin('PATCH', '/v1/catalog/events/Nope', { properties: {} }), 404, 'not_found', 'PATCH unknown event');
  expectError(t, await member('PATCH', '/v1/catalog/events/Patched', { properties: { z: 'string' } }), 403, 'forbidden', 'member PATCH');

  await admin('POST', '/v1/catalog/traits', { name: 'seats', type: 'string' });
  const tp = await admin('PATCH', '/v1/catalog/traits/seats', { type: 'number' });
  t.same([tp.status, tp.body.data.type, tp.body.data.state], [200, 'number', 'allowed'], 'PATCH trait type');
  expectError(t, await admin('PATCH', '/v1/catalog/traits/seats', { type: 'int' }), 422, 'validation_failed', 'bad trait type', '/data/type');
  expectError(t, await admin('PATCH', '/v1/catalog/traits/nope', { type: 'number' }), 404, 'not_found', 'PATCH unknown trait');
  expectError(t, await member('PATCH', '/v1/catalog/traits/seats', { type: 'boolean' }), 403, 'forbidden', 'member PATCH trait');

  for (const [kind, name] of [['events', 'Patched'], ['traits', 'seats']] as const) {
    const path = `/v1/catalog/${kind}/${name}/state`;
    const d1 = await admin('POST', path, { state: 'denied' });
    t.same([d1.status, d1.body.data.state, d1.body.data.name], [200, 'denied', name], `${kind}: allowed -> denied`);
    t.equal((await member('GET', `/v1/catalog/${kind}/${name}`)).body.data.state, 'denied', `${kind}: persisted`);
    t.equal((await admin('POST', path, { state: 'denied' })).body.data.state, 'denied', `${kind}: denied again is fine`);
    const a1 = await admin('POST', path, { state: 'allowed' });
    t.same([a1.status, a1.body.data.state], [200, 'allowed'], `${kind}: denied -> allowed`);
    expectError(t, await member('POST', path, { state: 'denied' }), 403, 'forbidden', `${kind}: member sets state`);
    t.equal((await admin('GET', `/v1/catalog/${kind}/${name}`)).body.data.state, 'allowed', `${kind}: the member changed nothing`);
    for (const [label, data] of [['state missing', {}], ['state quarantined', { state: 'quarantined' }], ['state null', { state: null }]] as const) {
      expectError(t, await admin('POST', path, data), 422, 'validation_failed', `${kind}: ${label}`, '/data/state');
    }
    expectError(t, await admin('POST', `/v1/catalog/${kind}/nope/state`, { state: 'denied' }), 404, 'not_found', `${kind}: state of unknown name`);
    expectError(t, await call(s.url, 'POST', path, { token: org.sessions.admin, raw: '{"state":"denied"}', contentType: 'application/json' }), 400, 'malformed_request', `${kind}: no data wrapper`);
  }
});

t.test('settings', async (t) => {
  const o = await createOrg(s);
  const a = as(o.sessions.admin);
  const m = as(o.sessions.member);
  const g = await m('GET', '/v1/settings');
  t.same([g.status, g.body.data?.ingestionPolicy], [200, 'permissive'], 'default permissive; member reads');
  const p = await a('PATCH', '/v1/settings', { ingestionPolicy: 'strict' });
  t.same([p.status, p.body.data?.ingestionPolicy], [200, 'strict'], 'admin sets strict');
  t.equal((await m('GET', '/v1/settings')).body.data.ingestionPolicy, 'strict', 'persisted');
  t.equal((await admin('GET', '/v1/settings')).body.data.ingestionPolicy, 'permissive', 'per org');
  for (const [label, data, field] of [['bad policy', { ingestionPolicy: 'lenient' }, '/data/ingestionPolicy'], ['policy null', { ingestionPolicy: null }, '/data/ingestionPolicy']] as const) {
    expectError(t, await a('PATCH', '/v1/settings', data), 422, 'validation_failed', label, field);
  }
  expectError(t, await m('PATCH', '/v1/settings', { ingestionPolicy: 'permissive' }), 403, 'forbidden', 'member PATCH');
  t.equal((await a('GET', '/v1/settings')).body.data.ingestionPolicy, 'strict', 'refused changes changed nothing');
  t.equal((await a('PATCH', '/v1/settings', { ingestionPolicy: 'permissive' })).body.data.ingestionPolicy, 'permissive', 'back to permissive');
  expectError(t, await call(s.url, 'GET', '/v1/settings', { token: o.apiKey }), 401, 'invalid_key', 'API key');
});

t.test('promote and deny with nothing held', async (t) => {
  const d0 = await admin('POST', '/v1/catalog/quarantine/deny', { kind: 'event', name: 'Never Seen' });
  t.same([d0.status, d0.body.data], [200, { dropped: 0 }], 'deny of an unheld name drops 0');
  const e = await admin('GET', '/v1/catalog/events/Never%20Seen');
  t.same([e.status, e.body.data?.state, e.body.data?.properties], [200, 'denied', {}], 'the name is now a denied catalog event');
  const dt = await admin('POST', '/v1/catalog/quarantine/deny', { kind: 'trait', name: 'neverSeen' });
  t.same(dt.body.data, { dropped: 0 });
  t.same([(await admin('GET', '/v1/catalog/traits/neverSeen')).body.data?.state], ['denied'], 'the trait is now denied');
  t.equal((await admin('POST', '/v1/catalog/quarantine/deny', { kind: 'event', name: 'Never Seen' })).body.data.dropped, 0, 'deny again');

  await admin('POST', '/v1/catalog/traits', { name: 'fav', type: 'number' });
  t.same((await admin('POST', '/v1/catalog/quarantine/deny', { kind: 'trait', name: 'fav' })).body.data, { dropped: 0 });
  const fav = (await admin('GET', '/v1/catalog/traits/fav')).body.data;
  t.same([fav.state, fav.type], ['denied', 'number'], 'deny of a registered trait keeps its type');

  const p = await admin('POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Never Seen' });
  t.same([p.status, p.body.data], [200, { promoted: 0 }], 'promote of a denied name applies 0');
  t.equal((await admin('GET', '/v1/catalog/events/Never%20Seen')).body.data.state, 'denied', 'denied wins: promote does not lift a deny');
  await admin('POST', '/v1/catalog/events/Never%20Seen/state', { state: 'allowed' });
  t.same((await admin('POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Never Seen' })).body.data, { promoted: 0 }, 'promote of an allowed name with nothing held');
  t.equal((await admin('GET', '/v1/catalog/events/Never%20Seen')).body.data.state, 'allowed', 'still allowed');
  const pn = await admin('POST', '/v1/catalog/quarantine/promote', { kind: 'trait', name: 'brandNew' });
  t.same(pn.body.data, { promoted: 0 });
  t.same([(await admin('GET', '/v1/catalog/traits/brandNew')).body.data?.state], ['allowed'], 'promote creates a missing name as allowed');

  for (const path of ['/v1/catalog/quarantine/promote', '/v1/catalog/quarantine/deny']) {
    expectError(t, await member('POST', path, { kind: 'event', name: 'x' }), 403, 'forbidden', `member ${path}`);
    for (const [label, data, field] of [['kind missing', { name: 'x' }, '/data/kind'], ['bad kind', { kind: 'profile', name: 'x' }, '/data/kind'], ['name empty', { kind: 'event', name: '' }, '/data/name'], ['name missing', { kind: 'trait' }, '/data/name']] as const) {
      expectError(t, await admin('POST', path, data), 422, 'validation_failed', `${path}: ${label}`, field);
    }
  }
  expectError(t, await admin('GET', '/v1/catalog/events/x'), 404, 'not_found', 'refused calls registered nothing');
});

// ---------------------------------------------------------------- strict ingestion end to end

async function apiSource(o: OrgCreds): Promise<string> {
  const app = await call(s.url, 'POST', '/v1/apps', { token: o.sessions.admin, body: { data: { name: 'gov' } } });
  const srcs = await call(s.url, 'GET', `/v1/apps/${app.body.data.id}/sources`, { token: o.sessions.admin });
  return srcs.body.data[0].id;
}

t.test('permissive ingestion registers names with observed types', async (t) => {
  const o = await createOrg(s);
  const a = as(o.sessions.admin);
  const sourceId = await apiSource(o);
  const ingest = (path: string, data: unknown) => call(s.url, 'POST', path, { token: o.apiKey, body: { data: { sourceId, ...(data as object) } } });
  const tr = await ingest('/v1/track', { identifiers: { userId: 'u1' }, event: 'Viewed', messageId: 'm1', properties: { n: 1, tags: ['a', 'b'], mixed: [1, 'a'], obj: {}, nothing: null } });
  t.equal(tr.status, 201, `track accepted (${tr.text.slice(0, 200)})`);
  const ev = (await a('GET', '/v1/catalog/events/Viewed')).body.data;
  t.same([ev?.state, ev?.properties], ['allowed', { n: 'number', tags: 'array<string>', mixed: 'array<any>', obj: 'object' }], 'registered allowed with inferred types (nulls skipped)');
  await ingest('/v1/track', { identifiers: { userId: 'u1' }, event: 'Viewed', messageId: 'm2', properties: { n: 'one', extra: true } });
  t.same((await a('GET', '/v1/catalog/events/Viewed')).body.data.properties, { n: 'string', tags: 'array<string>', mixed: 'array<any>', obj: 'object', extra: 'boolean' }, 'observation keeps types current');
  const id = await ingest('/v1/identify', { identifiers: { userId: 'u1' }, traits: { plan: 'pro', seats: 3, consent: { marketing: true } } });
  t.equal(id.status, 200, `identify accepted (${id.text.slice(0, 200)})`);
  t.same([(await a('GET', '/v1/catalog/traits/plan')).body.data?.type, (await a('GET', '/v1/catalog/traits/seats')).body.data?.type], ['string', 'number'], 'traits registered with types');
  expectError(t, await a('GET', '/v1/catalog/traits/consent'), 404, 'not_found', 'consent is not a trait');

  await a('POST', '/v1/catalog/events/Viewed/state', { state: 'denied' });
  expectError(t, await ingest('/v1/track', { identifiers: { userId: 'u1' }, event: 'Viewed', messageId: 'm3' }), 422, 'event_denied', 'a denied event', 'Viewed');
  await a('POST', '/v1/catalog/traits/seats/state', { state: 'denied' });
  expectError(t, await ingest('/v1/identify', { identifiers: { userId: 'u1' }, traits: { seats: 4 } }), 422, 'trait_denied', 'a denied trait', 'seats');
  t.equal((await a('GET', '/v1/catalog/events/Viewed')).body.data.state, 'denied', 'observation never undoes a deny');
});

t.test('strict ingestion holds; promote applies in arrival order; deny drops', async (t) => {
  const o = await createOrg(s);
  const a = as(o.sessions.admin);
  const sourceId = await apiSource(o);
  const ingest = (path: string, data: unknown) => call(s.url, 'POST', path, { token: o.apiKey, body: { data: { sourceId, ...(data as object) } } });
  await a('PATCH', '/v1/settings', { ingestionPolicy: 'strict' });
  await a('POST', '/v1/catalog/traits', { name: 'plan', type: 'string' });

  for (let i = 1; i <= 3; i++) {
    const r = await ingest('/v1/track', { identifiers: { userId: 'u1' }, event: 'Held', messageId: `h${i}`, properties: { i } });
    t.same([r.status, r.body?.data], [200, { status: 'quarantined' }], `held track ${i}`);
  }
  const replay = await ingest('/v1/track', { identifiers: { userId: 'u1' }, event: 'Held', messageId: 'h1', properties: { i: 99 } });
  t.same(replay.body?.data, { status: 'quarantined' }, 'a replay of a held event answers quarantined');
  expectError(t, await a('GET', '/v1/catalog/events/Held'), 404, 'not_found', 'a held name is not in the catalog');

  const id1 = await ingest('/v1/identify', { identifiers: { userId: 'u1' }, traits: { plan: 'pro', color: 'red' } });
  t.equal(id1.status, 200);
  t.same(id1.body.data?.traits, { plan: 'pro' }, 'known traits applied, unknown held');
  await ingest('/v1/identify', { identifiers: { userId: 'u1' }, traits: { color: 'blue' } });

  const p = await a('POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Held' });
  t.same([p.status, p.body?.data], [200, { promoted: 3 }], 'three held events applied');
  const ev = (await a('GET', '/v1/catalog/events/Held')).body.data;
  t.same([ev?.state, ev?.properties], ['allowed', { i: 'number' }], 'allowed with inferred property types');
  t.equal((await a('POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Held' })).body.data.promoted, 0, 'the queue is drained');
  t.equal((await ingest('/v1/track', { identifiers: { userId: 'u1' }, event: 'Held', messageId: 'h4' })).status, 201, 'a promoted name is accepted');

  const pt = await a('POST', '/v1/catalog/quarantine/promote', { kind: 'trait', name: 'color' });
  t.same(pt.body?.data, { promoted: 2 }, 'two held trait values applied');
  const prof = await call(s.url, 'GET', `/v1/profiles/${id1.body.data.id}`, { token: o.sessions.admin });
  if (prof.status === 200) t.equal(prof.body.data.traits.color, 'blue', 'the later held value wins (arrival order)');
  t.equal((await a('GET', '/v1/catalog/traits/color')).body.data?.type, 'string', 'trait allowed with its inferred type');

  for (let i = 1; i <= 2; i++) await ingest('/v1/track', { identifiers: { userId: 'u2' }, event: 'Spam', messageId: `s${i}` });
  await ingest('/v1/identify', { identifiers: { userId: 'u2' }, traits: { junk: 1 } });
  t.same((await a('POST', '/v1/catalog/quarantine/deny', { kind: 'event', name: 'Spam' })).body.data, { dropped: 2 }, 'deny drops the held events');
  t.same((await a('POST', '/v1/catalog/quarantine/deny', { kind: 'trait', name: 'junk' })).body.data, { dropped: 1 }, 'deny drops the held trait');
  t.equal((await a('GET', '/v1/catalog/events/Spam')).body.data?.state, 'denied');
  expectError(t, await ingest('/v1/track', { identifiers: { userId: 'u2' }, event: 'Spam', messageId: 's9' }), 422, 'event_denied', 'the denied name is refused');
  t.equal((await a('POST', '/v1/catalog/quarantine/promote', { kind: 'event', name: 'Spam' })).body.data.promoted, 0, 'nothing left to promote after a deny');
});

// ---------------------------------------------------------------- governance store functions

const dbUrl = process.env.DATABASE_URL;
const pool = dbUrl ? new pg.Pool({ connectionString: dbUrl, max: 3 })
  : s.dataDir ? new pg.Pool({ host: join(s.dataDir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 3 }) : undefined;
if (pool) t.teardown(() => pool.end());
const version = async (orgId: string) => Number((await pool!.query('SELECT catalog_version FROM orgs WHERE id = $1', [orgId])).rows[0].catalog_version);

t.test('catalog_version moves on every mutation, and only then', { skip: !pool && 'no direct database access' }, async (t) => {
  const o = await createOrg(s);
  const a = as(o.sessions.admin);
  let v = await version(o.org.id);
  const step = async (label: string, fn: () => Promise<unknown>, moves = true) => {
    await fn();
    const now = await version(o.org.id);
    t.equal(now > v, moves, `${label} ${moves ? 'bumps' : 'keeps'} the version`);
    v = now;
  };
  await step('register event', () => a('POST', '/v1/catalog/events', { name: 'E' }));
  await step('conflict', () => a('POST', '/v1/catalog/events', { name: 'E' }), false);
  await step('PATCH event', () => a('PATCH', '/v1/catalog/events/E', { properties: { x: 'string' } }));
  await step('event state', () => a('POST', '/v1/catalog/events/E/state', { state: 'denied' }));
  await step('register trait', () => a('POST', '/v1/catalog/traits', { name: 't', type: 'string' }));
  await step('PATCH trait', () => a('PATCH', '/v1/catalog/traits/t', { type: 'number' }));
  await step('trait state', () => a('POST', '/v1/catalog/traits/t/state', { state: 'denied' }));
  await step('404 PATCH', () => a('PATCH', '/v1/catalog/traits/none', { type: 'number' }), false);
  await step('settings', () => a('PATCH', '/v1/settings', { ingestionPolicy: 'strict' }));
  await step('deny', () => a('POST', '/v1/catalog/quarantine/deny', { kind: 'event', name: 'D' }));
  await step('reads', () => Promise.all([a('GET', '/v1/catalog/events'), a('GET', '/v1/settings'), a('GET', '/v1/catalog/traits/t')]), false);
});

t.test('SnapshotCache and observe', { skip: !pool && 'no direct database access' }, async (t) => {
  const o = await createOrg(s);
  const a = as(o.sessions.admin);
  const orgId = o.org.id;
  const cache = new SnapshotCache();
  const s1 = (await cache.get(pool!, [orgId, 'org_unknown'])).get(orgId)!;
  t.same([s1.policy, s1.events.size, s1.traits.size], ['permissive', 0, 0], 'a new org: permissive, empty');
  t.notOk((await cache.get(pool!, ['org_unknown'])).has('org_unknown'), 'unknown orgs are absent');
  t.equal((await cache.get(pool!, [orgId])).get(orgId), s1, 'unchanged version: the same snapshot, no reload');
  await a('POST', '/v1/catalog/events', { name: 'Known', properties: { p: 'string' } });
  const s2 = (await cache.get(pool!, [orgId])).get(orgId)!;
  t.not(s2, s1, 'a catalog change reloads');
  t.same(s2.events.get('Known'), { state: 'allowed', properties: { p: 'string' } });
  cache.invalidate(orgId);
  t.not((await cache.get(pool!, [orgId])).get(orgId), s2, 'invalidate forces a reload');
  t.same((await loadSnapshot(pool!, orgId))?.events.get('Known')?.state, 'allowed', 'loadSnapshot');
  t.equal(await loadSnapshot(pool!, 'org_unknown'), undefined, 'loadSnapshot of an unknown org');

  const v0 = await version(orgId);
  const same = collectObservations([{ event: 'Known', properties: { p: 'text' } }]);
  t.equal(await observe(pool!, orgId, s2, same), false, 'nothing new: no write');
  t.equal(await version(orgId), v0, 'version kept');

  const fresh = collectObservations([{ event: 'New', properties: { n: 1 } }, { event: 'Known', properties: { q: true } }, { traits: { plan: 'pro' } }]);
  t.equal(await observe(pool!, orgId, s2, fresh), true, 'new names and properties are written');
  t.equal(await version(orgId), v0 + 1, 'one bump for the whole batch');
  t.same((await a('GET', '/v1/catalog/events/Known')).body.data.properties, { p: 'string', q: 'boolean' }, 'property added');
  t.same((await a('GET', '/v1/catalog/events/New')).body.data.properties, { n: 'number' });
  t.equal(await observe(pool!, orgId, s2, fresh), false, 'the same batch against a stale snapshot: upserts change nothing, no bump');
  t.equal(await version(orgId), v0 + 1);

  // Two workers with the same stale snapshot register one name at once.
  const both = await Promise.all([
    observe(pool!, orgId, s2, collectObservations([{ event: 'Race', properties: { a: 1 } }])),
    observe(pool!, orgId, s2, collectObservations([{ event: 'Race', properties: { b: 'x' } }])),
  ]);
  t.ok(both.some(Boolean), 'concurrent registration succeeds');
  t.same((await a('GET', '/v1/catalog/events/Race')).body.data.properties, { a: 'number', b: 'string' }, 'both observations merged');

  await a('POST', '/v1/catalog/events/Known/state', { state: 'denied' });
  const v1 = await version(orgId);
  t.equal(await observe(pool!, orgId, s2, collectObservations([{ event: 'Known', properties: { z: 1 } }])), false, 'a stale "allowed" never rewrites a denied name');
  t.equal((await a('GET', '/v1/catalog/events/Known')).body.data.state, 'denied');
  t.equal(await version(orgId), v1);
});

t.test('holdCalls, promote and deny', { skip: !pool && 'no direct database access' }, async (t) => {
  const o = await createOrg(s);
  const orgId = o.org.id;
  const mk = (n: number, receivedAt: number, body: any, kind: 'track' | 'identify' = 'track'): IngestCall => ({
    id: `c${n}`, kind, orgId, appId: 'app_x', sourceId: 'src_x', environment: 'production', receivedAt, body,
  });
  const held = [
    mk(1, 1000, { event: 'Q', identifiers: { userId: 'u' }, messageId: 'm1', properties: { a: 1 } }),
    mk(2, 3000, { event: 'Q', identifiers: { userId: 'u' }, messageId: 'm3', properties: { b: ['x'] } }),
    mk(3, 2000, { event: 'Q', identifiers: { userId: 'u' }, messageId: 'm2', properties: { a: 'late', c: null } }),
  ];
  const inTx = async <T>(fn: (c: pg.PoolClient) => Promise<T>) => {
    const c = await pool!.connect();
    try { await c.query('BEGIN'); const out = await fn(c); await c.query('COMMIT'); return out; } finally { c.release(); }
  };
  t.same(await inTx((c) => holdCalls(c, held.map((call) => ({ orgId, kind: 'event' as const, name: 'Q', call })))), [], 'all held');
  t.same(await inTx((c) => holdCalls(c, [{ orgId, kind: 'trait', name: 'tt', call: mk(4, 500, { identifiers: { userId: 'u' }, traits: { tt: 5 } }, 'identify') }])), []);

  const v0 = await version(orgId);
  const out = await promote(pool!, orgId, 'event', 'Q');
  t.same(out.map((c) => c.id), ['c1', 'c3', 'c2'], 'arrival order (receivedAt)');
  t.same(out[0], held[0], 'the call comes back as it was held');
  t.equal(await version(orgId), v0 + 1, 'promote bumps once');
  const q = await call(s.url, 'GET', '/v1/catalog/events/Q', { token: o.sessions.admin });
  t.same([q.body.data.state, q.body.data.properties], ['allowed', { a: 'string', b: 'array<string>' }], 'allowed with types of the held values (last wins)');
  t.same(await promote(pool!, orgId, 'event', 'Q'), [], 'nothing left');

  // The name is classified now: a worker with a stale snapshot cannot hold it any more.
  const late = await inTx((c) => holdCalls(c, [
    { orgId, kind: 'event', name: 'Other', call: held[0]! },
    { orgId, kind: 'event', name: 'Q', call: held[1]! },
  ]));
  t.same(late, [1], 'the classified name is refused, by index');
  t.equal(await deny(pool!, orgId, 'event', 'Other'), 1, 'deny drops the other');
  t.equal((await call(s.url, 'GET', '/v1/catalog/events/Other', { token: o.sessions.admin })).body.data.state, 'denied');
  // Held before a deny through the state route: promote leaves both the deny and the values alone.
  await inTx((c) => holdCalls(c, [{ orgId, kind: 'event', name: 'Later', call: held[0]! }]));
  await call(s.url, 'POST', '/v1/catalog/events', { token: o.sessions.admin, body: { data: { name: 'Later' } } });
  await call(s.url, 'POST', '/v1/catalog/events/Later/state', { token: o.sessions.admin, body: { data: { state: 'denied' } } });
  const v1 = await version(orgId);
  t.same(await promote(pool!, orgId, 'event', 'Later'), [], 'promote of a denied name takes nothing');
  t.equal(await version(orgId), v1, 'and changes nothing');
  t.equal(await deny(pool!, orgId, 'event', 'Later'), 1, 'deny drops what was held before the deny');
  t.equal(await deny(pool!, orgId, 'trait', 'tt'), 1, 'deny of a held trait');
  const tt = (await call(s.url, 'GET', '/v1/catalog/traits/tt', { token: o.sessions.admin })).body.data;
  t.same([tt.state, tt.type], ['denied', 'number'], 'created denied with the held value\'s type');
});

t.test('promote route: replay, counting and requeue', { skip: !pool && 'no direct database access' }, async (t) => {
  const o = await createOrg(s);
  const orgId = o.org.id;
  const handlers = new Map<string, (req: any) => Promise<any>>();
  let replayed: IngestCall[][] = [];
  let answer: (calls: IngestCall[]) => Promise<CallResult[]> = async (calls) => calls.map(() => ({ status: 201, data: {} }));
  const warns: unknown[] = [];
  const deps = {
    pool, log: { warn: (_m: string, f: unknown) => warns.push(f), info() {}, error() {}, debug() {} },
    ingest: { replay: (calls: IngestCall[]) => { replayed.push(calls); return answer(calls); } },
  } as unknown as Deps;
  catalogRoutes(((method: string, path: string, h: any) => handlers.set(`${method} ${path}`, h)) as any, deps);
  t.equal(handlers.size, 13, 'thirteen catalog routes');
  const promoteRoute = (name: string, d: Deps = deps, kind = 'event') => {
    const m = new Map<string, any>();
    catalogRoutes(((method: string, path: string, h: any) => m.set(`${method} ${path}`, h)) as any, d);
    return m.get('POST /v1/catalog/quarantine/promote')({ principal: { orgId }, body: { data: { kind, name } } });
  };
  const hold = async (name: string, n: number) => {
    const c = await pool!.connect();
    try {
      await c.query('BEGIN');
      await holdCalls(c, Array.from({ length: n }, (_, i) => ({
        orgId, kind: 'event' as const, name,
        call: { id: `${name}${i}`, kind: 'track' as const, orgId, appId: 'a', sourceId: 's', environment: 'production' as const, receivedAt: i, body: { event: name, identifiers: { userId: 'u' }, messageId: `${name}${i}` } },
      })));
      await c.query('COMMIT');
    } finally { c.release(); }
  };
  const queued = async (name: string) => Number((await pool!.query('SELECT count(*) AS n FROM quarantine WHERE org_id = $1 AND name = $2', [orgId, name])).rows[0].n);

  await hold('A', 3);
  t.same(await promoteRoute('A'), { data: { promoted: 3 } });
  t.same(replayed[0]!.map((c) => [c.id, c.promoted]), [['A0', true], ['A1', true], ['A2', true]], 'replayed in arrival order, marked promoted');

  replayed = [];
  await hold('B', 4);
  answer = async () => [{ status: 201, data: {} }, { status: 200, data: {} }, { status: 429, error: { code: 'rate_limited', message: 'x' } }, { status: 404, error: { code: 'not_found', message: 'gone' } }];
  t.same(await promoteRoute('B'), { data: { promoted: 2 } }, 'only applied values count');
  t.equal(await queued('B'), 1, 'the transient failure is queued again; the final one is dropped');
  t.equal(warns.length, 1, 'the dropped value is logged');

  await hold('C', 2);
  answer = async () => { throw new Error('stream down'); };
  await t.rejects(promoteRoute('C'), /stream down/, 'a failed replay fails the promote');
  t.equal(await queued('C'), 2, 'and every value is back in the queue');
  answer = async (calls) => calls.map(() => ({ status: 201, data: {} }));
  t.same(await promoteRoute('C'), { data: { promoted: 2 } }, 'a retried promote applies them');

  // Trait values of one person replay one wave at a time, in arrival order.
  replayed = [];
  const c = await pool!.connect();
  try {
    await c.query('BEGIN');
    const ids = [{ userId: 'u1' }, { userId: 'u2' }, { userId: 'u1', anonymousId: 'a1' }, { anonymousId: 'a1' }, { userId: 'u3' }];
    await holdCalls(c, ids.map((identifiers, i) => ({
      orgId, kind: 'trait' as const, name: 'tr',
      call: { id: `t${i}`, kind: 'identify' as const, orgId, appId: 'a', sourceId: 's', environment: 'production' as const, receivedAt: i, body: { identifiers, traits: { tr: i } } },
    })));
    await c.query('COMMIT');
  } finally { c.release(); }
  const tr = await promoteRoute('tr', deps, 'trait');
  t.same(tr, { data: { promoted: 5 } });
  t.same(replayed.map((w) => w.map((x) => x.id)), [['t0', 't1', 't4'], ['t2'], ['t3']], 'waves: a chain of one person is sequential, others share a wave');

  await hold('D', 1);
  await t.rejects(promoteRoute('D', { ...deps, ingest: undefined } as Deps), { code: 'dependency_unavailable', status: 503 }, 'no pipeline: 503');
  t.equal(await queued('D'), 1, 'and nothing was taken');
  expectError(t, await call(s.url, 'GET', '/v1/catalog/events/D', { token: o.sessions.admin }), 404, 'not_found', 'nor classified');
});
