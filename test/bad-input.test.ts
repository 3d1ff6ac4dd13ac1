// Bad and odd input on every route of the route table, generated from schemas/: NUL characters and
// lone surrogates in every place a string arrives (path segment, query parameter, body member value
// and name, nested, batch call), integers past each schema's maximum or past 2^53, non-integers,
// date-times the stores cannot hold, `data` of every wrong JSON type, bodies without `data`.
// Each answer: never 5xx, the error envelope with a registered code (plain text on the receiver),
// and nothing written (the org's state is the same before and after, checked through the API).
import t from 'tap';
import { routes } from '../schemas/routes.js';
import type { RouteDef } from '../schemas/route.js';
import { ERROR_CODES } from '../schemas/errors.js';
import { startServer, call, createAppFixture, uid, poll, type Res } from './helpers/server.js';

const s = await startServer();
t.teardown(() => s.close());

const f = await createAppFixture(s);
const admin = f.admin;
const org = f.org;
const get = (path: string) => call(s.url, 'GET', path, { token: admin });

// Things that exist, so that bad input reaches past the lookups.
const eventName = uid('fz_event');
const traitName = uid('fz_trait');
const anon = uid('anon');
const seeded = await call(s.url, 'POST', '/v1/identify', { token: f.key, body: { data: { sourceId: f.source.id, identifiers: { anonymousId: anon }, traits: { plan: 'pro' } } } });
const profileId = seeded.body.data.id as string;
await call(s.url, 'POST', '/v1/catalog/events', { token: admin, body: { data: { name: eventName } } });
await call(s.url, 'POST', '/v1/catalog/traits', { token: admin, body: { data: { name: traitName, type: 'string' } } });
const segment = await call(s.url, 'POST', '/v1/segments', { token: admin, body: { data: { name: uid('seg'), definition: { predicates: [{ kind: 'trait', name: 'plan', op: 'exists' }] } } } });
const segmentId = segment.body.data.id as string;

const NOW = new Date().toISOString();
const BIG = 2 ** 53 + 1;

/** A request body that passes each route's schema, with every optional member the mutations should reach. */
const BASE: Record<string, unknown> = {
  identify: { sourceId: f.source.id, identifiers: { anonymousId: 'a1', userId: 'u1', email: 'a@example.com' }, traits: { plan: 'pro', nested: { k: 'v' }, list: ['x'] }, timestamp: NOW, messageId: 'm1' },
  track: { sourceId: f.source.id, identifiers: { anonymousId: 'a1' }, event: 'fz_e', properties: { a: 'b', nested: { c: 'd' }, list: ['y'] }, timestamp: NOW, messageId: 'm2' },
  batch: { sourceId: f.source.id, calls: [{ type: 'identify', identifiers: { anonymousId: 'a2' }, traits: { a: 'b', n: { c: 'd' } } }] },
  batch2: { sourceId: f.source.id, calls: [{ type: 'track', identifiers: { anonymousId: 'a2' }, event: 'fz_b', properties: { a: 'b' }, messageId: 'm3', timestamp: NOW }] },
  catalogEventsCreate: { name: 'fz_new', properties: { p: 'string' } },
  catalogEventsUpdate: { properties: { p: 'number' } },
  catalogEventsSetState: { state: 'denied' },
  catalogTraitsCreate: { name: 'fz_new_trait', type: 'string' },
  catalogTraitsUpdate: { type: 'number' },
  catalogTraitsSetState: { state: 'denied' },
  catalogQuarantinePromote: { kind: 'event', name: 'fz_held' },
  catalogQuarantineDeny: { kind: 'event', name: 'fz_held' },
  appsCreate: { name: 'fz app', environment: 'development' },
  appsUpdate: { name: 'fz renamed' },
  appSourcesCreate: { kind: 'idp', config: { signingSecret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0' } },
  sourcesUpdate: { config: { signingSecret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0', note: 'n' } },
  segmentsCreate: { name: 'fz seg', description: 'd', environments: ['production'], definition: { match: 'any', appId: f.app.id, predicates: [
    { kind: 'trait', name: 'plan', op: 'eq', value: 'pro' }, { kind: 'event', name: 'fz_e', op: 'performed', atLeast: 2, withinDays: 7 }] } },
  segmentsPreview: { match: 'all', appId: [f.app.id], predicates: [{ kind: 'event', name: 'fz_e', op: 'performed', atLeast: 1, withinDays: 30 }] },
  segmentsUpdate: { name: 'fz seg 2', description: 'd2', definition: { predicates: [{ kind: 'event', name: 'fz_e', op: 'notPerformed', atLeast: 3, withinDays: 3 }] } },
  orgsCreate: { name: 'fz org' },
  orgsSessionsCreate: { role: 'org:member', userId: 'usr_fz' },
  orgsUpdate: { limits: { ratePerSecond: 100, burst: 200, monthlyEvents: 1000 } },
  orgsLoginLinksCreate: { role: 'org:member', userId: 'usr_fz' },
  sessionsExchange: { loginToken: 'fz.login.token' },
  // graceSeconds: past 86400, negative, fractional and string values are generated from this.
  credentialsRotate: { kind: 'apiKey', graceSeconds: 60 },
  settingsUpdate: { ingestionPolicy: 'strict' },
  webhooksCreate: { name: 'fz hook', config: { url: 'https://example.com/hook' } },
  webhooksUpdate: { name: 'fz hook 2', config: { url: 'https://example.com/hook2' }, enabled: false },
  journeysUpdate: { enabled: true },
};

/** Valid path parameter values per route (unknown ids still answer 404, which is fine). */
function pathValues(r: RouteDef): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of r.path.matchAll(/\{([^}]+)\}/g)) {
    const name = m[1]!;
    if (name === 'orgId') out[name] = org.org.id;
    else if (name === 'appId' || (name === 'id' && r.path.startsWith('/v1/apps/'))) out[name] = f.app.id;
    else if (name === 'sourceId' || (name === 'id' && r.path.startsWith('/v1/sources/'))) out[name] = f.source.id;
    else if (name === 'id' && r.path.startsWith('/v1/segments/')) out[name] = segmentId;
    else if (name === 'id' && r.path.startsWith('/v1/profiles/')) out[name] = profileId;
    else if (name === 'name') out[name] = r.path.includes('/traits/') ? traitName : eventName;
    else if (name === 'digest') out[name] = 'a'.repeat(64);
    else out[name] = `fz_${name}`;
  }
  return out;
}

function tokenFor(r: RouteDef): string | undefined {
  if (r.auth.includes('operator')) return s.operatorToken;
  if (r.auth.includes('apiKey')) return f.key;
  if (r.auth.includes('session')) return admin;
  if (r.auth.includes('pipelineKey')) return org.pipelineKey;
  return undefined;
}

/** A batch answers 200 with one result per call: each call must be refused. */
const BASES = (id: string): Json[] => [BASE[id], BASE[`${id}2`]].filter((b) => b !== undefined) as Json[];

/** Members whose values are free-form JSON: any type is valid there (only their strings are checked). */
const FREE = [/^\/data\/traits/, /^\/data\/properties/, /^\/data\/calls\/\d+\/(traits|properties)/, /^\/data\/config\/note/, /\/value$/];
const isFree = (where: string) => FREE.some((re) => re.test(where));

/** `mustRefuse`: the case breaks a rule, so it must be answered 4xx; otherwise it must only not fail. */
interface Case { route: RouteDef; label: string; path: string; body?: string; contentType?: string; mustRefuse: boolean }

const fill = (r: RouteDef, values: Record<string, string>) => r.path.replace(/\{([^}]+)\}/g, (_, n) => values[n]!);

// Raw JSON texts: a lone surrogate must travel as an escape (JSON.stringify writes one).
const BAD_STRINGS: Array<[string, string]> = [
  ['NUL', 'a\u0000b'], ['only NUL', '\u0000'], ['lone high surrogate', 'x\ud800'], ['lone low surrogate', '\udc00y'],
  ['reversed pair', '\udc00\ud800'],
];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every leaf (and every object, for member names) of `v` with its path. */
function leaves(v: Json, path: Array<string | number> = []): Array<{ path: Array<string | number>; value: Json }> {
  const out: Array<{ path: Array<string | number>; value: Json }> = [{ path, value: v }];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...leaves(x, [...path, i])));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...leaves(x, [...path, k]));
  return out;
}

function setAt(root: Json, path: Array<string | number>, value: Json): Json {
  const copy = JSON.parse(JSON.stringify(root)) as Json;
  if (path.length === 0) return value;
  let node: any = copy;
  for (const p of path.slice(0, -1)) node = node[p];
  node[path[path.length - 1]!] = value;
  return copy;
}

function bodyCases(r: RouteDef): Case[] {
  const bases = BASES(r.id);
  const out = generic(r, bases[0]);
  for (const b of bases) out.push(...leafCases(r, b));
  return out;
}

function generic(r: RouteDef, base: Json | undefined): Case[] {
  const path = fill(r, pathValues(r));
  const out: Case[] = [];
  const add = (label: string, body: string, contentType = 'application/json') => out.push({ route: r, label, path, body, contentType, mustRefuse: true });
  // Wrong wrappers and wrong types of `data`.
  for (const d of ['0', '[]', '"s"', 'null', 'true', '1e400', '[{}]']) add(`data = ${d}`, `{"data":${d}}`);
  add('no data member', '{"nodata":{}}');
  add('body is an array', '[]');
  add('body is a number', '7');
  add('not JSON', '{"data":');
  add('a raw NUL byte', '{"data":"\u0000"}');
  add('wrong content type', JSON.stringify({ data: base ?? {} }), 'text/plain');
  add('nested 70 levels', `{"data":${'['.repeat(70)}${']'.repeat(70)}}`);
  add('member name with NUL', JSON.stringify({ data: { ...(base as object ?? {}), 'x\u0000': 1 } }));
  add('member name with a lone surrogate', JSON.stringify({ data: { ...(base as object ?? {}), '\ud800': 1 } }));
  return out;
}

function leafCases(r: RouteDef, base: Json): Case[] {
  const path = fill(r, pathValues(r));
  const out: Case[] = [];
  const add = (label: string, body: string) => out.push({ route: r, label, path, body, contentType: 'application/json', mustRefuse: true });
  for (const { path: p, value } of leaves(base)) {
    const where = `/data/${p.join('/')}`;
    if (typeof value === 'string') {
      for (const [label, bad] of BAD_STRINGS) add(`${where}: ${label}`, JSON.stringify({ data: setAt(base, p, value + bad) }));
      if (!isFree(where)) add(`${where}: a number instead of a string`, JSON.stringify({ data: setAt(base, p, 12) }));
      if (value === NOW) {
        for (const ts of ['0000-01-01T00:00:00Z', '1899-12-31T23:59:59Z', '2300-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '2024-02-30T00:00:00Z', 'yesterday']) {
          add(`${where}: date-time ${ts}`, JSON.stringify({ data: setAt(base, p, ts) }));
        }
      }
    } else if (typeof value === 'number') {
      // ratePerSecond and burst are numbers, not integers: 1.5 is valid there.
      for (const n of [2 ** 31, BIG, 1e300, 1.5, -1]) {
        if (n === 1.5 && /ratePerSecond|burst/.test(where)) continue;
        if (n === 2 ** 31 && /monthlyEvents/.test(where)) continue; // its maximum is 2^53 - 1
        add(`${where}: ${n}`, JSON.stringify({ data: setAt(base, p, n) }));
      }
      add(`${where}: a string instead of a number`, JSON.stringify({ data: setAt(base, p, '5') }));
    } else if (value !== null && typeof value === 'object' && !Array.isArray(value) && p.length > 0) {
      add(`${where}: member name with NUL`, JSON.stringify({ data: setAt(base, p, { ...value, 'k\u0000': 'v' }) }));
      add(`${where}: member name with a lone surrogate`, JSON.stringify({ data: setAt(base, p, { ...value, '\udfff': 'v' }) }));
    }
  }
  return out;
}

const BAD_SEGMENTS = ['%00', 'a%00b', '%E0%A4%A', '%ED%A0%80', '%C0%80', 'x'.repeat(300)];
// [label, value, refused when the parameter is: 'any' | 'integer' | 'date-time' | null (odd only)]
const BAD_QUERY: Array<[string, string, string | null]> = [
  ['NUL', '%00', 'any'], ['NUL inside', 'a%00b', 'any'], ['invalid percent-encoding', '%E0%A4%A', null], ['encoded surrogate', '%ED%A0%80', null],
  ['2^31', String(2 ** 31), 'integer'], ['2^53+1', String(BIG), 'integer'], ['1e400', '1e400', 'integer'], ['-1', '-1', 'integer'], ['1.5', '1.5', 'integer'],
  ['year 0000', '0000-01-01T00:00:00Z', 'date-time'], ['year 2300', '2300-01-01T00:00:00Z', 'date-time'], ['300 characters', 'q'.repeat(300), null],
];

function queryKind(r: RouteDef, name: string): string {
  const p = (r.query as any)?.properties?.[name];
  if (!p) return 'unknown';
  if (p.type === 'integer' || p.type === 'number') return 'integer';
  if (p.format === 'date-time') return 'date-time';
  return 'string';
}

function paramCases(r: RouteDef): Case[] {
  const values = pathValues(r);
  const out: Case[] = [];
  const body = BASE[r.id] !== undefined ? JSON.stringify({ data: BASE[r.id] }) : undefined;
  for (const name of Object.keys(values)) {
    for (const bad of BAD_SEGMENTS) out.push({ route: r, label: `path {${name}} = ${bad.slice(0, 20)}`, path: fill(r, { ...values, [name]: bad }), body, contentType: 'application/json',
      // A CORS preflight answers any well-formed path (a long one included).
      mustRefuse: !(r.method === 'OPTIONS' && bad.startsWith('x')) });
  }
  const props = Object.keys((r.query as any)?.properties ?? {});
  for (const q of [...props, 'unknown\u0000']) {
    const kind = q === 'unknown\u0000' ? 'any' : queryKind(r, q);
    for (const [label, v, refusedFor] of BAD_QUERY) {
      const key = q === 'unknown\u0000' ? 'x%00y' : q;
      const mustRefuse = kind === 'any' || refusedFor === 'any' || refusedFor === kind;
      out.push({ route: r, label: `query ${key}: ${label}`, path: `${fill(r, values)}?${key}=${v}`, body, contentType: 'application/json', mustRefuse });
    }
  }
  return out;
}

/** What a case may answer: any 4xx except the ones that would mean it was judged valid. */
function judge(c: Case, res: Res): string | null {
  const r = c.route;
  if (res.status >= 500) return `status ${res.status}: ${res.text.slice(0, 200)}`;
  if (r.id === 'batch' && res.status === 200 && c.mustRefuse) {
    const bad = (res.body?.data ?? [null]).filter((x: any) => !(x?.status >= 400 && x.status < 500 && ERROR_CODES.includes(x.error?.code)));
    return bad.length ? `a batch call was not refused: ${res.text.slice(0, 200)}` : null;
  }
  if (res.status < 400) return c.mustRefuse ? `accepted with ${res.status}: ${res.text.slice(0, 200)}` : null;
  // The receiver answers in plain text; a path that does not decode matches no route (404 envelope).
  if (r.auth.includes('signature') && /^text\/plain/.test(res.headers.get('content-type') ?? '')) return null;
  if (r.method === 'HEAD') return null;
  // Segment-compatible routes answer in Segment's shape: { success: false, code, message }.
  if (r.tag === 'segment' && res.body?.success === false) {
    return ERROR_CODES.includes(res.body.code) && typeof res.body.message === 'string' ? null : `not a Segment error answer: ${res.text.slice(0, 200)}`;
  }
  const code = res.body?.error?.code;
  if (!ERROR_CODES.includes(code)) return `no registered error code: ${res.text.slice(0, 200)}`;
  if (typeof res.body?.error?.message !== 'string' || !res.body.error.message) return 'no error message';
  if (res.body?.meta?.requestId !== res.headers.get('x-request-id')) return 'meta.requestId differs from x-request-id';
  return null;
}

async function send(c: Case): Promise<Res> {
  const token = tokenFor(c.route);
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (c.contentType && c.body !== undefined) headers['content-type'] = c.contentType;
  const hasBody = c.body !== undefined && !['GET', 'HEAD', 'DELETE'].includes(c.route.method);
  const res = await fetch(s.url + c.path, { method: c.route.method, headers, body: hasBody ? c.body : undefined });
  const text = await res.text();
  let body: any;
  try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
  return { status: res.status, body, text, headers: res.headers };
}

/** The org's state as the API shows it; a refused request must leave it as it was. */
async function snapshot() {
  const strip = (r: Res) => JSON.stringify(r.body?.data ?? r.status);
  return {
    apps: strip(await get('/v1/apps?limit=100')),
    sources: strip(await get(`/v1/apps/${f.app.id}/sources?limit=100`)),
    source: JSON.stringify({ ...(await get(`/v1/sources/${f.source.id}`)).body?.data, lastReceivedAt: null }),
    events: strip(await get('/v1/catalog/events?limit=100')),
    traits: strip(await get('/v1/catalog/traits?limit=100')),
    segments: strip(await get('/v1/segments?limit=100')),
    segment: strip(await get(`/v1/segments/${segmentId}`)),
    settings: strip(await get('/v1/settings')),
    profile: strip(await get(`/v1/profiles/${profileId}`)),
    webhooks: strip(await get('/v1/webhooks?limit=100')),
    pushes: strip(await get('/v1/pushes?limit=100')),
  };
}

const cases: Case[] = [];
for (const r of routes) {
  if (r.path === '/health/live' || r.path === '/openapi.json') continue;
  if (r.body) cases.push(...bodyCases(r));
  cases.push(...paramCases(r));
}

t.test(`${cases.length} generated bad-input cases over ${routes.length} routes`, async (t) => {
  const before = await snapshot();
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  for (let i = 0; i < cases.length; i += 8) {
    const slice = cases.slice(i, i + 8);
    const answers = await Promise.all(slice.map(send));
    slice.forEach((c, k) => {
      const res = answers[k]!;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const why = judge(c, res);
      if (why) failures.push(`${c.route.method} ${c.route.path} [${c.label}]: ${why}`);
    });
  }
  t.same(failures, [], 'every case answered 4xx with the envelope');
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);

  // Nothing written: a sentinel write lands after every refused one; the state is what it was.
  const after = await snapshot();
  for (const k of Object.keys(before) as Array<keyof typeof before>) t.equal(after[k], before[k], `${k} unchanged`);
  const sentinel = uid('sentinel');
  t.equal((await call(s.url, 'POST', '/v1/track', { token: f.key, body: { data: { sourceId: f.source.id, identifiers: { anonymousId: anon }, event: sentinel, messageId: uid('m') } } })).status, 201);
  const listed = await poll(() => get('/v1/events?limit=100'), (r) => r.body?.data?.some((e: any) => e.event === sentinel), 10_000);
  // (The segment created above let the seeded profile enter it: that system event is the setup's.)
  t.same(listed.body.data.map((e: any) => e.event).filter((e: string) => !e.startsWith('system.')), [sentinel], 'the only event written is the sentinel');
});

t.test('a batch refuses only the call holding an unstorable string', async (t) => {
  const ok = uid('anon');
  const r = await call(s.url, 'POST', '/v1/batch', { token: f.key, body: { data: { sourceId: f.source.id, calls: [
    { type: 'identify', identifiers: { anonymousId: ok }, traits: { fine: 'yes' } },
    { type: 'identify', identifiers: { anonymousId: uid('anon') }, traits: { bad: 'a\u0000b' } },
    { type: 'track', identifiers: { anonymousId: ok }, event: 'e\ud800', messageId: uid('m') },
    { type: 'track', identifiers: { anonymousId: ok }, event: 'fine', messageId: uid('m'), properties: { ['k\u0000']: 1 } },
  ] } } });
  t.equal(r.status, 200);
  t.same(r.body.data.map((x: any) => x.status), [200, 422, 422, 422]);
  t.match(r.body.data[1].error, { code: 'validation_failed', message: /\/data\/calls\/1\/traits\/bad/ });
  t.match(r.body.data[2].error.message, /\/data\/calls\/2\/event: must not contain a lone UTF-16 surrogate/);
  t.match(r.body.data[3].error.message, /\/data\/calls\/3\/properties\/.*member name must not contain the NUL/);
  const found = await call(s.url, 'GET', `/v1/profiles?kind=anonymousId&value=${ok}`, { token: admin });
  t.equal(found.body.data[0].traits.fine, 'yes', 'the good call was written');
});

t.test('valid surrogate pairs and escaped characters pass', async (t) => {
  const r = await call(s.url, 'POST', '/v1/identify', { token: f.key, body: { data: { sourceId: f.source.id, identifiers: { anonymousId: uid('anon') }, traits: { emoji: '\ud83d\ude00 ok', ['\ud83d\udc4d']: 'key' } } } });
  t.equal(r.status, 200);
  t.equal(r.body.data.traits.emoji, '😀 ok');
  t.equal(r.body.data.traits['👍'], 'key');
  const escaped = await call(s.url, 'POST', '/v1/identify', { token: f.key, raw: `{"data":{"sourceId":"${f.source.id}","identifiers":{"anonymousId":"${uid('anon')}"},"traits":{"e":"\\ud83d\\ude00\\u0001"}}}`, contentType: 'application/json' });
  t.equal(escaped.status, 200, 'an escaped pair and a control character other than NUL are stored');
  t.equal(escaped.body.data.traits.e, '😀\u0001');
});
