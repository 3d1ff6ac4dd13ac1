// Ingestion governance as pure functions (OpenAPI document: "Property and trait types"):
// type inference, canonical trait formats, deny-list and strict-policy decisions, observation diffs.
import t from 'tap';
import {
  checkIdentify, checkTrack, collectObservations, diffObservations, inferType, replayWaves, validateCanonicalTraits,
  type CatalogSnapshot,
} from '../pipeline/governance/mod.js';
import type { IngestCall, TrackBody } from '../pipeline/types.js';

type Entries<V> = Array<[string, V]>;
function snapshot(policy: 'permissive' | 'strict', events: Entries<{ state: 'allowed' | 'denied'; properties?: Record<string, string> }> = [],
  traits: Entries<{ state: 'allowed' | 'denied'; type?: string }> = []): CatalogSnapshot {
  return {
    version: 1, policy,
    events: new Map(events.map(([n, e]) => [n, { state: e.state, properties: e.properties ?? {} }])),
    traits: new Map(traits.map(([n, e]) => [n, { state: e.state, type: e.type ?? 'string' }])),
  };
}

t.test('inferType', async (t) => {
  const rows: Array<[unknown, string | null]> = [
    ['', 'string'], ['x', 'string'], [0, 'number'], [-1.5, 'number'], [1e300, 'number'], [true, 'boolean'], [false, 'boolean'],
    [{}, 'object'], [{ a: 1 }, 'object'], [{ a: [1] }, 'object'],
    [[], 'array<any>'], [['a', 'b'], 'array<string>'], [[1, 2.5], 'array<number>'], [[true, false], 'array<boolean>'],
    [[{}, { a: 1 }], 'array<object>'], [[1, 'a'], 'array<any>'], [[{}, []], 'array<any>'], [[[1], [2]], 'array<any>'],
    [[true, 1], 'array<any>'], [['a'], 'array<string>'],
    // Nulls carry no type: skipped alone, ignored inside arrays.
    [null, null], [undefined, null], [[null], 'array<any>'], [[1, null, 2], 'array<number>'], [[null, 'a'], 'array<string>'],
  ];
  for (const [v, want] of rows) t.equal(inferType(v), want, `${JSON.stringify(v)} -> ${want}`);
});

t.test('validateCanonicalTraits: valid values pass', async (t) => {
  const valid: Array<[string, unknown]> = [
    ['email', 'a@b.co'], ['email', 'first.last+tag@example.com'], ['email', 'USER@Example.ORG'], ['email', "o'brien@sub.domain.io"],
    ['email', 'x_y-z@a-b.example'], ['email', `${'a'.repeat(64)}@example.com`],
    ['phone', '+14155550123'], ['phone', '+442071838750'], ['phone', '+12'], ['phone', '+123456789012345'],
    ['createdAt', '2024-05-01T12:00:00Z'], ['createdAt', '2024-05-01T12:00:00.123Z'], ['createdAt', '2024-05-01T12:00:00+02:00'],
    ['createdAt', '2024-02-29T23:59:59-05:30'], ['createdAt', '2024-05-01t12:00:00z'], ['createdAt', '1999-12-31T00:00:00.000000+00:00'],
    ['birthday', '1990-01-31'], ['birthday', '2000-02-29'], ['birthday', '2024-02-29'], ['birthday', '1900-12-31'], ['birthday', '0001-01-01'],
    ['website', 'https://example.com'], ['website', 'http://example.com/path?q=1#frag'], ['website', 'HTTPS://EXAMPLE.COM'],
    ['website', 'https://sub.example.co.uk:8443/a/b'], ['website', 'http://localhost:3000'], ['website', 'https://user:pw@example.com/'],
    ['avatar', 'https://cdn.example.com/a.png'], ['avatar', 'http://127.0.0.1/x.jpg'],
    ['age', 0], ['age', 150], ['age', 29], ['age', 29.5], ['age', 0.1],
  ];
  for (const [name, value] of valid) t.equal(validateCanonicalTraits({ [name]: value }), null, `${name} ${JSON.stringify(value)} is valid`);
});

t.test('validateCanonicalTraits: invalid values fail, naming the trait', async (t) => {
  const invalid: Array<[string, unknown]> = [
    ['email', 'not-an-email'], ['email', 'a@b'], ['email', '@example.com'], ['email', 'a@'], ['email', 'a b@example.com'],
    ['email', 'a@@example.com'], ['email', 'a..b@example.com'], ['email', '.a@example.com'], ['email', 'a@-example.com'],
    ['email', 'a@example..com'], ['email', ''], ['email', 42], ['email', true], ['email', ['a@b.co']], ['email', { v: 'a@b.co' }],
    ['email', `${'a'.repeat(65)}@example.com`], ['email', `a@${'b'.repeat(250)}.com`], ['email', ' a@b.co'],
    ['phone', '4155550123'], ['phone', '+0123456'], ['phone', '+1 415 555 0123'], ['phone', '+1-415-555-0123'], ['phone', '+1234567890123456'],
    ['phone', '+'], ['phone', '+1'], ['phone', ''], ['phone', 14155550123], ['phone', '+1415555012a'],
    ['createdAt', '2024-05-01'], ['createdAt', '2024-05-01T12:00:00'], ['createdAt', '2024-05-01 12:00:00Z'], ['createdAt', '2024-13-01T00:00:00Z'],
    ['createdAt', '2023-02-29T00:00:00Z'], ['createdAt', '2024-04-31T00:00:00Z'], ['createdAt', '2024-05-01T24:00:00Z'], ['createdAt', '2024-05-01T12:60:00Z'],
    ['createdAt', '2024-05-01T12:00:61Z'], ['createdAt', '2024-05-01T12:00Z'], ['createdAt', '2024-05-01T12:00:00+0200'], ['createdAt', '2024-05-01T12:00:00+24:00'],
    ['createdAt', 'yesterday'], ['createdAt', ''], ['createdAt', 1714564800000], ['createdAt', 'Wed, 01 May 2024 12:00:00 GMT'],
    ['birthday', '1990-1-31'], ['birthday', '1990-02-30'], ['birthday', '2023-02-29'], ['birthday', '1900-02-29'], ['birthday', '1990-00-10'],
    ['birthday', '1990-13-01'], ['birthday', '1990-06-31'], ['birthday', '1990-01-00'], ['birthday', '1990-01-01T00:00:00Z'], ['birthday', '19900101'],
    ['birthday', '01/31/1990'], ['birthday', ''], ['birthday', 19900131],
    ['website', 'example.com'], ['website', 'www.example.com'], ['website', 'ftp://example.com'], ['website', 'mailto:a@b.co'],
    ['website', 'http://'], ['website', 'https:/example.com'], ['website', 'http:example.com'], ['website', '/relative/path'], ['website', 'http://exa mple.com'],
    ['website', ' https://example.com'], ['website', 'javascript:alert(1)'], ['website', ''], ['website', 42],
    ['avatar', 'data:image/png;base64,AAAA'], ['avatar', 'cdn.example.com/a.png'], ['avatar', 'file:///etc/passwd'],
    ['age', -1], ['age', 150.5], ['age', 151], ['age', '30'], ['age', Number.NaN], ['age', Number.POSITIVE_INFINITY], ['age', true], ['age', [30]],
  ];
  for (const [name, value] of invalid) {
    const r = validateCanonicalTraits({ [name]: value });
    t.equal(r?.name, name, `${name} ${JSON.stringify(value)} is invalid`);
    t.ok(r?.message.includes(`"${name}"`), `message names ${name}: ${r?.message}`);
  }
});

t.test('validateCanonicalTraits: other traits and nulls', async (t) => {
  t.equal(validateCanonicalTraits({}), null, 'no traits');
  t.equal(validateCanonicalTraits({ name: 'x', Email: 'nope', plan: 3, nested: { email: 'nope' } }), null, 'only the exact top-level names are canonical');
  for (const n of ['email', 'phone', 'createdAt', 'birthday', 'website', 'avatar', 'age']) {
    t.equal(validateCanonicalTraits({ [n]: null }), null, `${n}: null is not a bad format`);
  }
  t.equal(validateCanonicalTraits({ email: 'a@b.co', age: 200 })?.name, 'age', 'a later bad trait is found');
  t.equal(validateCanonicalTraits({ age: 200, email: 'bad' })?.name, 'email', 'the first in canonical order is reported');
});

t.test('checkTrack', async (t) => {
  const rows: Array<[string, CatalogSnapshot, string, boolean, string]> = [
    ['permissive unknown', snapshot('permissive'), 'New', false, 'ok'],
    ['permissive allowed', snapshot('permissive', [['A', { state: 'allowed' }]]), 'A', false, 'ok'],
    ['permissive denied', snapshot('permissive', [['D', { state: 'denied' }]]), 'D', false, 'reject'],
    ['strict unknown', snapshot('strict'), 'New', false, 'hold'],
    ['strict unknown promoted', snapshot('strict'), 'New', true, 'ok'],
    ['strict allowed', snapshot('strict', [['A', { state: 'allowed' }]]), 'A', false, 'ok'],
    ['strict denied', snapshot('strict', [['D', { state: 'denied' }]]), 'D', false, 'reject'],
    ['denied wins over promoted (strict)', snapshot('strict', [['D', { state: 'denied' }]]), 'D', true, 'reject'],
    ['denied wins over promoted (permissive)', snapshot('permissive', [['D', { state: 'denied' }]]), 'D', true, 'reject'],
    ['names are case-sensitive', snapshot('strict', [['a', { state: 'allowed' }]]), 'A', false, 'hold'],
    ['a denied neighbour does not matter', snapshot('strict', [['D', { state: 'denied' }], ['A', { state: 'allowed' }]]), 'A', false, 'ok'],
  ];
  for (const [label, snap, event, promoted, want] of rows) {
    const body: TrackBody = { event, identifiers: { userId: 'u' }, messageId: 'm' };
    const r = checkTrack(snap, body, promoted);
    t.equal(r.kind, want, label);
    if (r.kind === 'reject') {
      t.equal(r.code, 'event_denied', `${label}: code`);
      t.ok(r.message.includes(event), `${label}: message names the event`);
    }
  }
});

t.test('checkIdentify', async (t) => {
  const cat: Entries<{ state: 'allowed' | 'denied' }> = [['plan', { state: 'allowed' }], ['email', { state: 'allowed' }], ['ssn', { state: 'denied' }]];
  const strict = snapshot('strict', [], cat);
  const permissive = snapshot('permissive', [], cat);

  const denied = checkIdentify(permissive, { plan: 'pro', ssn: '123' }, false);
  t.same(denied.kind === 'reject' && [denied.code, denied.message.includes('ssn')], ['trait_denied', true], 'a denied trait rejects the call, naming it');
  const deniedWins = checkIdentify(strict, { email: 'bad', ssn: null, other: 1 }, true);
  t.equal(deniedWins.kind === 'reject' && deniedWins.code, 'trait_denied', 'denied wins over validation, promotion and strict');
  const bad = checkIdentify(permissive, { email: 'nope', plan: 'x' }, false);
  t.same(bad.kind === 'reject' && [bad.code, bad.message.includes('email')], ['trait_validation_failed', true], 'canonical format failure');
  const badHeld = checkIdentify(strict, { age: 999 }, false);
  t.equal(badHeld.kind === 'reject' && badHeld.code, 'trait_validation_failed', 'an unknown (would-be held) canonical trait is validated too');

  const traits = { plan: 'pro', color: 'red', email: 'a@b.co' };
  const p = checkIdentify(permissive, traits, false);
  t.ok(p.kind === 'ok' && p.apply === traits, 'permissive applies everything, without copying');
  t.same(p.kind === 'ok' && p.held, {}, 'permissive holds nothing');

  const s = checkIdentify(strict, traits, false);
  t.same(s.kind === 'ok' && s.apply, { plan: 'pro', email: 'a@b.co' }, 'strict applies known names');
  t.same(s.kind === 'ok' && s.held, { color: 'red' }, 'strict holds unknown names');
  const sp = checkIdentify(strict, traits, true);
  t.same(sp.kind === 'ok' && [sp.apply, sp.held], [traits, {}], 'promoted: unknown names applied');
  const known = checkIdentify(strict, { plan: 'team' }, false);
  t.ok(known.kind === 'ok' && known.apply.plan === 'team' && Object.keys(known.held).length === 0, 'strict with only known names holds nothing');
  const allUnknown = checkIdentify(strict, { a: 1, b: [1] }, false);
  t.same(allUnknown.kind === 'ok' && [allUnknown.apply, allUnknown.held], [{}, { a: 1, b: [1] }], 'strict, all unknown: all held');
  const empty = checkIdentify(strict, {}, false);
  t.same(empty.kind === 'ok' && [empty.apply, empty.held], [{}, {}], 'no traits');

  const proto = JSON.parse('{"__proto__": {"x": 1}, "plan": "p"}');
  const pr = checkIdentify(strict, proto, false);
  t.ok(pr.kind === 'ok' && Object.hasOwn(pr.held, '__proto__') && Object.getPrototypeOf(pr.held) === Object.prototype, 'a trait named __proto__ stays data');
});

t.test('collectObservations and diffObservations', async (t) => {
  const call = (kind: 'track' | 'identify', body: any): IngestCall => ({
    id: 'c', kind, orgId: 'org_1', appId: 'app_1', sourceId: 'src_1', environment: 'production', receivedAt: 0, body,
  });
  const obs = collectObservations([
    call('track', { event: 'Signed Up', identifiers: {}, messageId: 'm1', properties: { plan: 'pro', seats: 3, gone: null } }),
    call('track', { event: 'Signed Up', identifiers: {}, messageId: 'm2', properties: { seats: 'many', tags: ['a'] } }),
    call('track', { event: 'Bare', identifiers: {}, messageId: 'm3' }),
    call('identify', { identifiers: {}, traits: { plan: 'pro', age: 30, nothing: null, consent: { email: true } } }),
    { traits: { consent: 'yes', list: [1, 'a'] } },
    { event: 'Direct', properties: { ok: true } },
  ]);
  t.same(Object.fromEntries([...obs.events].map(([k, v]) => [k, { ...v }])), {
    'Signed Up': { plan: 'string', seats: 'string', tags: 'array<string>' }, Bare: {}, Direct: { ok: 'boolean' },
  }, 'event property types, last value wins, nulls skipped');
  t.same(Object.fromEntries(obs.traits), { plan: 'string', age: 'number', consent: 'string', list: 'array<any>' },
    'trait types; consent as an object of booleans is not a trait');

  const empty = snapshot('permissive');
  const d = diffObservations(empty, obs)!;
  t.same(d.events.map((e) => e.n), ['Bare', 'Direct', 'Signed Up'], 'permissive registers every new event, sorted by name');
  t.same(d.traits.map((x) => x.n), ['age', 'consent', 'list', 'plan'], 'permissive registers every new trait, sorted');
  t.equal(diffObservations(snapshot('strict'), obs), null, 'strict registers nothing new');

  const current = snapshot('strict', [
    ['Signed Up', { state: 'allowed', properties: { plan: 'string', seats: 'string', tags: 'array<string>' } }],
    ['Bare', { state: 'allowed' }], ['Direct', { state: 'denied', properties: {} }],
  ], [['plan', { state: 'allowed', type: 'string' }], ['age', { state: 'denied', type: 'string' }]]);
  t.equal(diffObservations(current, obs), null, 'nothing differs from the snapshot: no write');
  t.equal(diffObservations({ ...current, policy: 'permissive', traits: new Map([...current.traits, ['consent', { state: 'allowed', type: 'string' }], ['list', { state: 'allowed', type: 'array<any>' }]]) }, obs), null,
    'permissive with every name known and current: no write');

  const drift = snapshot('strict', [['Signed Up', { state: 'allowed', properties: { plan: 'number', seats: 'string' } }]],
    [['plan', { state: 'allowed', type: 'number' }]]);
  const dd = diffObservations(drift, obs)!;
  t.same(dd.events.map((e) => [e.n, { ...e.p }]), [['Signed Up', { plan: 'string', tags: 'array<string>' }]], 'changed and new properties of an allowed event');
  t.same(dd.traits, [{ n: 'plan', t: 'string' }], 'changed type of an allowed trait');

  const withProto = snapshot('permissive', [['E', { state: 'allowed', properties: {} }]]);
  const po = collectObservations([{ event: 'E', properties: JSON.parse('{"constructor": 1, "__proto__": "x"}') }]);
  t.same(diffObservations(withProto, po)!.events.map((e) => Object.keys(e.p).sort()), [['__proto__', 'constructor']], 'prototype-named properties are plain data');
});

t.test('replayWaves', async (t) => {
  const mk = (identifiers: Record<string, string>): IngestCall => ({
    id: 'c', kind: 'identify', orgId: 'o', appId: 'a', sourceId: 's', environment: 'production', receivedAt: 0, body: { identifiers },
  });
  t.same(replayWaves('trait', []), [], 'nothing held');
  const chain = [mk({ anonymousId: 'x' }), mk({ anonymousId: 'x', userId: 'u' }), mk({ userId: 'u' }), mk({ email: 'e' }), mk({ anonymousId: 'x' }), mk({ userId: 'v' })];
  t.same(replayWaves('trait', chain), [[0, 3, 5], [1], [2], [4]], 'each call after the latest one of its person (linked through shared identifiers)');
  const linked = [mk({ anonymousId: 'a' }), mk({ userId: 'u' }), mk({ anonymousId: 'a', userId: 'u' }), mk({ anonymousId: 'a' }), mk({ userId: 'u' })];
  t.same(replayWaves('trait', linked), [[0, 1], [2], [3], [4]], 'two people linked by a later call are one person from then on');
  t.same(replayWaves('event', chain), [[0, 1, 2, 3, 4, 5]], 'events replay in one wave');
  t.same(replayWaves('trait', [mk({ userId: 'a' }), mk({ userId: 'b' }), mk({ userId: 'c' })]), [[0, 1, 2]], 'distinct people share a wave');
  t.same(replayWaves('trait', [mk({ userId: 'a' }), mk({ anonymousId: 'a' })]), [[0, 1]], 'identifier kinds are distinct');
});
