// An identity-churn storm (issue 21): a seeded mix of identify and track calls, single and in
// `/v1/batch`, over many connections, on persons that each own a userId, an e-mail and four
// anonymousIds, with hot keys and replays of earlier acknowledged tracks; then the service is
// checked against a model: a union-find of the identifiers used together in acknowledged calls.
//
//   (a) every identifier of a component resolves (GET /v1/profiles?kind&value) to exactly one
//       live profile, the same for the whole component, holding exactly the component's identifiers;
//   (b) every acknowledged track (distinct messageId) is listed exactly once, with its acknowledged
//       event id, under its component's profile (GET /v1/events?profileId=), and nothing else is;
//   (c) across the org, by event name, every acknowledged event id is listed exactly once;
//   (d) every replay is answered 200 with the original event id.
//
// 429 and 503 answers (and no answer) are not acknowledgements: the call is sent again with the
// same messageId (identify calls carry messageIds too, so their retries are idempotent).
// Events are polled for (up to `settleMs` after the storm), never awaited with a fixed sleep.

export interface StormOptions {
  url: string;
  operatorToken: string;
  seed: number;
  /** Calls in all (replays included); default 6000. */
  calls?: number;
  /** Persons (each: 1 userId, 1 email, 4 anonymousIds); default 300. */
  persons?: number;
  /** Concurrent HTTP requests; default 48. */
  connections?: number;
  /** Share of calls that re-send an earlier acknowledged track unchanged; default 0.08. */
  replayShare?: number;
  /** Share of calls sent in `/v1/batch` requests; default 0.5. */
  batchShare?: number;
  batchSize?: number;
  /** Share of new calls that are identify calls; default 0.4. */
  identifyShare?: number;
  /** Share of persons that are hot, and the share of new calls that go to them; defaults 0.05 and 0.4. */
  hotPersons?: number;
  hotShare?: number;
  /** How long after the storm the events may take to be listed; default 30 s. */
  settleMs?: number;
  /** Attempts per call before it counts as never acknowledged; default 12. */
  maxAttempts?: number;
  requestTimeoutMs?: number;
  /** Progress lines (optional). */
  log?: (line: string) => void;
}

export interface MissingEvent { id: string; messageId: string; call: number; person: number; unit: number; replayedBy: number }

export interface StormReport {
  seed: number;
  orgId: string;
  calls: number;
  identifies: number;
  tracks: number;
  replays: number;
  requests: number;
  batches: number;
  retries: number;
  statuses: Record<string, number>;
  ackedTracks: number;
  components: number;
  profiles: number;
  stormMs: number;
  settleMs: number;
  checkMs: number;
  durationMs: number;
  missing: number;
  missingEvents: MissingEvent[];
  /** Short, specific lines (the first 40, then a count of the rest). */
  violations: string[];
  /** How many violations were found (violations holds at most 41 lines). */
  violationCount: number;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Kind = 'userId' | 'email' | 'anonymousId';
interface Ident { kind: Kind; value: string }
const keyOf = (i: Ident) => `${i.kind}=${i.value}`;

interface Call {
  i: number;
  type: 'identify' | 'track';
  person: number;
  identifiers: Ident[];
  event?: string;
  messageId: string;
  body: Record<string, unknown>;
  /** Index of the call this one replays. */
  replayOf?: number;
  unit: number;
  /** Answers (status or error name) in order. */
  answers: Array<number | string>;
  acked: boolean;
  /** Event id (track) or profile id (identify) of the acknowledging answer. */
  ackId?: string;
  ackStatus?: number;
  /** Gave an answer that is neither an acknowledgement nor retryable. */
  failed?: string;
  done: Promise<void>;
  settle: () => void;
}

interface Unit { index: number; batch: boolean; calls: Call[] }

const EVENTS = ['Storm Viewed', 'Storm Clicked', 'Storm Bought'];
const RETRYABLE = new Set([429, 502, 503, 504]);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const MAX_LINES = 40;

export async function runStorm(o: StormOptions): Promise<StormReport> {
  const calls = o.calls ?? 6000;
  const persons = o.persons ?? 300;
  const connections = o.connections ?? 48;
  const replayShare = o.replayShare ?? 0.08;
  const batchShare = o.batchShare ?? 0.5;
  const batchSize = o.batchSize ?? 10;
  const identifyShare = o.identifyShare ?? 0.4;
  const hotCount = Math.max(1, Math.round(persons * (o.hotPersons ?? 0.05)));
  const hotShare = o.hotShare ?? 0.4;
  const settleMs = o.settleMs ?? 30_000;
  const maxAttempts = o.maxAttempts ?? 12;
  const requestTimeoutMs = o.requestTimeoutMs ?? 45_000;
  const log = o.log ?? (() => {});
  const url = o.url.replace(/\/$/, '');
  const started = Date.now();
  const violations: string[] = [];
  let suppressed = 0;
  const violate = (line: string) => { if (violations.length < MAX_LINES) violations.push(line); else suppressed++; };

  // ---------------------------------------------------------------- HTTP
  let requests = 0;
  let retries = 0;
  const statuses: Record<string, number> = {};
  const count = (k: number | string) => { statuses[k] = (statuses[k] ?? 0) + 1; };
  async function http(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any; text: string } | { error: string }> {
    requests++;
    try {
      const r = await fetch(url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
      const text = await r.text();
      let parsed: any;
      try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
      return { status: r.status, body: parsed, text };
    } catch (err) {
      return { error: (err as Error).name || 'error' };
    }
  }
  const must = async (method: string, path: string, token: string, body: unknown, want: number) => {
    const r = await http(method, path, token, body);
    if ('error' in r || r.status !== want) throw new Error(`${method} ${path}: ${'error' in r ? r.error : `${r.status} ${r.text.slice(0, 300)}`}`);
    return r.body;
  };

  // ---------------------------------------------------------------- org, limits lifted, app
  const org = (await must('POST', '/v1/orgs', o.operatorToken, { data: { name: `storm-${o.seed}-${Date.now().toString(36)}` } }, 201)).data;
  await must('PATCH', `/v1/orgs/${org.org.id}`, o.operatorToken, { data: { limits: { ratePerSecond: 1e9, burst: 1e9, monthlyEvents: null } } }, 200);
  const admin: string = org.sessions.admin;
  const apiKey: string = org.apiKey;
  const app = (await must('POST', '/v1/apps', admin, { data: { name: `storm-${o.seed}` } }, 201)).data;
  const sourceId: string = (await must('GET', `/v1/apps/${app.id}/sources`, admin, undefined, 200)).data[0].id;

  // ---------------------------------------------------------------- the plan (all of it from the seed)
  const rand = mulberry32(o.seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const tag = `s${(o.seed >>> 0).toString(36)}`;
  const identsOf = (p: number): Ident[] => [
    { kind: 'userId', value: `${tag}-u${p}` },
    { kind: 'email', value: `${tag}-p${p}@storm.example.com` },
    ...[0, 1, 2, 3].map((k): Ident => ({ kind: 'anonymousId', value: `${tag}-a${p}-${k}` })),
  ];
  const people = Array.from({ length: persons }, (_, p) => identsOf(p));
  const all: Call[] = [];
  const units: Unit[] = [];
  /** Track calls (not replays) by the unit they are sent in. */
  const tracksByUnit: number[][] = [];
  let open: Unit | undefined;
  const newCall = (c: Omit<Call, 'answers' | 'acked' | 'done' | 'settle'>): Call => {
    let settle!: () => void;
    const done = new Promise<void>((r) => { settle = r; });
    return { ...c, answers: [], acked: false, done, settle };
  };
  for (let i = 0; i < calls; i++) {
    const inBatch = rand() < batchShare;
    const unitIndex = inBatch && open ? open.index : units.length;
    // A replay re-sends a track sent at least `connections` units earlier (acknowledged by the
    // time it is sent: the sender waits for that), unchanged.
    let call: Call | undefined;
    if (rand() < replayShare) {
      const limit = unitIndex - connections;
      let candidates: number[] = [];
      if (limit > 0) {
        // A random earlier unit that holds tracks (a few draws, then give up).
        for (let d = 0; d < 8 && candidates.length === 0; d++) candidates = tracksByUnit[Math.floor(rand() * limit)] ?? [];
      }
      if (candidates.length) {
        const orig = all[pick(candidates)]!;
        call = newCall({ i, type: 'track', person: orig.person, identifiers: orig.identifiers, event: orig.event, messageId: orig.messageId, body: orig.body, replayOf: orig.i, unit: unitIndex });
      }
    }
    if (!call) {
      const person = rand() < hotShare ? Math.floor(rand() * hotCount) : Math.floor(rand() * persons);
      // 1 to 3 of the person's identifiers, at most one of a kind (a call names one value per kind).
      const pool = [...people[person]!];
      const n = 1 + Math.floor(rand() * 3);
      const ids: Ident[] = [];
      while (ids.length < n) {
        const x = pool.splice(Math.floor(rand() * pool.length), 1)[0]!;
        if (!ids.some((y) => y.kind === x.kind)) ids.push(x);
      }
      const identifiers = Object.fromEntries(ids.map((x) => [x.kind, x.value]));
      const messageId = `${tag}-m${i}`;
      if (rand() < identifyShare) {
        call = newCall({ i, type: 'identify', person, identifiers: ids, messageId, unit: unitIndex,
          body: { type: 'identify', identifiers, traits: { stormCall: i, plan: pick(['free', 'pro', 'team']) }, messageId } });
      } else {
        const event = pick(EVENTS);
        call = newCall({ i, type: 'track', person, identifiers: ids, event, messageId, unit: unitIndex,
          body: { type: 'track', identifiers, event, properties: { stormCall: i, person }, messageId } });
        (tracksByUnit[unitIndex] ??= []).push(i);
      }
    }
    all.push(call);
    if (inBatch) {
      if (!open) { open = { index: units.length, batch: true, calls: [] }; units.push(open); }
      open.calls.push(call);
      if (open.calls.length >= batchSize) open = undefined;
    } else {
      units.push({ index: unitIndex, batch: false, calls: [call] });
    }
  }
  const replays = all.filter((c) => c.replayOf !== undefined);
  log(`storm ${o.seed}: ${all.length} calls in ${units.length} requests, ${replays.length} replays, org ${org.org.id}`);

  // ---------------------------------------------------------------- the storm
  /** Records one answer of `c`; true when it acknowledged (or ended) the call. */
  const answer = (c: Call, status: number | string, data: any, error?: any): boolean => {
    c.answers.push(status);
    count(status);
    if (typeof status === 'string' || RETRYABLE.has(status)) return false;
    const id: unknown = data?.id;
    if (c.type === 'track' && (status === 201 || status === 200) && typeof id === 'string') {
      c.acked = true; c.ackStatus = status; c.ackId = id;
    } else if (c.type === 'identify' && status === 200 && typeof id === 'string') {
      c.acked = true; c.ackStatus = status; c.ackId = id;
    } else {
      c.failed = `${status} ${error ? `${error.code}: ${error.message}` : JSON.stringify(data ?? null).slice(0, 120)}`;
    }
    return true;
  };

  const sendUnit = async (u: Unit) => {
    // Replays go out once their originals are acknowledged (or ended).
    for (const c of u.calls) if (c.replayOf !== undefined) await all[c.replayOf]!.done;
    let pending = u.calls.filter((c) => c.replayOf === undefined || all[c.replayOf]!.acked);
    for (const c of u.calls) if (!pending.includes(c)) { c.failed = `not sent: replays call ${c.replayOf}, never acknowledged`; c.settle(); }
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > 1) { retries += pending.length; await sleep(Math.min(2_000, 50 * 2 ** Math.min(attempt, 6)) * (0.5 + rand2())); }
      if (u.batch) {
        const r = await http('POST', '/v1/batch', apiKey, { data: { sourceId, calls: pending.map((c) => c.body) } });
        if ('error' in r || r.status !== 200 || !Array.isArray(r.body?.data) || r.body.data.length !== pending.length) {
          const s = 'error' in r ? r.error : r.status;
          if (!('error' in r) && !RETRYABLE.has(r.status)) {
            for (const c of pending) { c.answers.push(s); c.failed = `batch ${r.status} ${r.text.slice(0, 120)}`; }
            pending = [];
          } else for (const c of pending) c.answers.push(s);
          count(`batch ${s}`);
        } else {
          const out: any[] = r.body.data;
          pending = pending.filter((c, k) => !answer(c, out[k]?.status, out[k]?.data, out[k]?.error));
        }
      } else {
        const c = pending[0]!;
        const { type, ...rest } = c.body;
        const r = await http('POST', type === 'identify' ? '/v1/identify' : '/v1/track', apiKey, { data: { sourceId, ...rest } });
        if ('error' in r ? !answer(c, r.error, undefined) : !answer(c, r.status, r.body?.data, r.body?.error)) pending = [c];
        else pending = [];
      }
      if (attempt >= maxAttempts && pending.length) {
        for (const c of pending) c.failed = `never acknowledged in ${maxAttempts} attempts (${c.answers.join(', ')})`;
        pending = [];
      }
      for (const c of u.calls) if (c.acked || c.failed) c.settle();
    }
    for (const c of u.calls) c.settle();
  };
  // Jitter of retries: a PRNG of its own, so the plan does not depend on timing.
  const rand2 = mulberry32(o.seed ^ 0x5bd1e995);

  let next = 0;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < units.length) await sendUnit(units[next++]!);
  }));
  const stormMs = Date.now() - started;
  log(`storm ${o.seed}: ${requests} requests, ${retries} retries in ${stormMs} ms`);

  // ---------------------------------------------------------------- answers
  for (const c of all) if (c.failed) violate(`call ${c.i} (${c.type} ${c.messageId}): ${c.failed}`);
  // (d) replays answer the original event.
  for (const c of replays) {
    const orig = all[c.replayOf!]!;
    if (!c.acked || !orig.acked) continue;
    if (c.ackStatus !== 200 || c.ackId !== orig.ackId) {
      violate(`replay call ${c.i} of ${orig.messageId}: answered ${c.ackStatus} ${c.ackId}, the original was ${orig.ackId}`);
    }
  }
  // One event id per acknowledged messageId, distinct messageIds distinct ids.
  const byMessage = new Map<string, Call>(); // messageId -> first acknowledged track
  const idOwner = new Map<string, string>(); // event id -> messageId
  for (const c of all) {
    if (c.type !== 'track' || !c.acked) continue;
    const first = byMessage.get(c.messageId);
    if (!first) {
      byMessage.set(c.messageId, c);
      const other = idOwner.get(c.ackId!);
      if (other) violate(`event ${c.ackId} acknowledged for two messageIds: ${other} and ${c.messageId}`);
      idOwner.set(c.ackId!, c.messageId);
    } else if (first.ackId !== c.ackId && c.replayOf === undefined) {
      violate(`messageId ${c.messageId} acknowledged as ${first.ackId} and as ${c.ackId}`);
    }
  }

  // ---------------------------------------------------------------- the model: union-find
  const parent = new Map<string, string>();
  const find = (k: string): string => {
    let r = k;
    while (parent.get(r) !== r) r = parent.get(r)!;
    while (parent.get(k) !== r) { const n = parent.get(k)!; parent.set(k, r); k = n; }
    return r;
  };
  const idents = new Map<string, Ident>();
  for (const c of all) {
    if (!c.acked) continue;
    for (const x of c.identifiers) { const k = keyOf(x); if (!parent.has(k)) { parent.set(k, k); idents.set(k, x); } }
    const [a, ...rest] = c.identifiers.map(keyOf);
    for (const b of rest) { const ra = find(a!), rb = find(b); if (ra !== rb) parent.set(rb, ra); }
  }
  const components = new Map<string, string[]>(); // root -> identifier keys
  for (const k of parent.keys()) { const r = find(k); let l = components.get(r); if (!l) components.set(r, (l = [])); l.push(k); }
  const tracksOf = new Map<string, Call[]>(); // root -> distinct acknowledged tracks
  for (const c of byMessage.values()) {
    const r = find(keyOf(c.identifiers[0]!));
    let l = tracksOf.get(r);
    if (!l) tracksOf.set(r, (l = []));
    l.push(c);
  }
  const compName = (root: string) => `component of ${root} (${components.get(root)!.length} identifiers)`;

  // A pool for the reads.
  const parallel = async <T>(items: T[], n: number, fn: (x: T) => Promise<void>) => {
    let k = 0;
    await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => { while (k < items.length) await fn(items[k++]!); }));
  };
  const readRetrying = async (path: string) => {
    for (let attempt = 1; ; attempt++) {
      const r = await http('GET', path, admin);
      if (!('error' in r) && r.status === 200) return { ok: true as const, body: r.body };
      if (attempt >= 5) return { ok: false as const, why: 'error' in r ? r.error : `${r.status} ${r.text.slice(0, 160)}` };
      await sleep(200 * attempt);
    }
  };
  type Listed = { id: string; messageId: string | null; profileId: string; event: string };
  const listAll = async (query: string): Promise<Listed[] | string> => {
    const out: Listed[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 1000; pages++) {
      const path: string = `/v1/events?${query}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const r = await readRetrying(path);
      if (!r.ok) return `GET ${path}: ${r.why}`;
      for (const e of r.body.data as Listed[]) out.push({ id: e.id, messageId: e.messageId, profileId: e.profileId, event: e.event });
      cursor = r.body.meta?.nextCursor ?? null;
      if (!cursor) return out;
    }
    return `GET /v1/events?${query}: more than 1000 pages`;
  };

  const checkStarted = Date.now();
  // ---------------------------------------------------------------- (a) one live profile per component
  const profileOf = new Map<string, string>(); // root -> profile id
  await parallel([...components.keys()], 16, async (root) => {
    const keys = components.get(root)!;
    const seen = new Map<string, string[]>(); // profile id -> identifier keys resolving to it
    let held: Set<string> | undefined;
    let profileId: string | undefined;
    for (const k of keys) {
      const x = idents.get(k)!;
      const r = await readRetrying(`/v1/profiles?kind=${x.kind}&value=${encodeURIComponent(x.value)}`);
      if (!r.ok) { violate(`${compName(root)}: GET profiles ${k}: ${r.why}`); return; }
      const list: any[] = r.body.data ?? [];
      if (list.length !== 1) { violate(`${compName(root)}: ${k} is on ${list.length} live profiles (${list.map((p) => p.id).join(', ')})`); continue; }
      const p = list[0];
      if (p.mergedInto) violate(`${compName(root)}: ${k} resolves to ${p.id}, merged into ${p.mergedInto}`);
      let l = seen.get(p.id);
      if (!l) { seen.set(p.id, (l = [])); }
      l.push(k);
      if (!profileId) { profileId = p.id; held = new Set(((p.identifiers ?? []) as any[]).map((i) => `${i.kind}=${i.value}`)); }
    }
    if (seen.size > 1) {
      violate(`${compName(root)} is split over ${seen.size} profiles: ${[...seen].map(([id, ks]) => `${id} [${ks.slice(0, 3).join(' ')}${ks.length > 3 ? ' ...' : ''}]`).join('; ')}`);
    }
    if (profileId && held) {
      const want = new Set(keys);
      const extra = [...held].filter((k) => !want.has(k));
      const lacking = keys.filter((k) => !held!.has(k));
      if (extra.length || lacking.length) {
        violate(`${compName(root)}: profile ${profileId} holds ${extra.length ? `foreign ${extra.slice(0, 4).join(' ')}` : ''}${extra.length && lacking.length ? ', ' : ''}${lacking.length ? `not ${lacking.slice(0, 4).join(' ')}` : ''}`);
      }
      profileOf.set(root, profileId);
    }
  });
  const profiles = new Set(profileOf.values());
  if (profiles.size !== profileOf.size) violate(`${profileOf.size} components resolve to only ${profiles.size} distinct profiles`);

  // ---------------------------------------------------------------- (c) by event name, across the org
  const wanted = new Map<string, Call>(); // event id -> its acknowledged track
  for (const c of byMessage.values()) wanted.set(c.ackId!, c);
  const deadline = Date.now() + settleMs;
  let byName = new Map<string, number>();
  let byNameError: string | undefined;
  for (;;) {
    byName = new Map();
    byNameError = undefined;
    for (const ev of EVENTS) {
      const l = await listAll(`event=${encodeURIComponent(ev)}`);
      if (typeof l === 'string') { byNameError = l; break; }
      for (const e of l) byName.set(e.id, (byName.get(e.id) ?? 0) + 1);
    }
    const present = [...wanted.keys()].filter((id) => byName.has(id)).length;
    if ((!byNameError && present === wanted.size) || Date.now() >= deadline) break;
    await sleep(500);
  }
  const settledMs = Date.now() - checkStarted;
  if (byNameError) violate(`listing by event name: ${byNameError}`);

  // ---------------------------------------------------------------- (b) under each component's profile
  const underProfile = new Map<string, number>(); // event id -> times listed under its own profile
  await parallel([...profileOf.keys()], 8, async (root) => {
    const pid = profileOf.get(root)!;
    const want = new Map((tracksOf.get(root) ?? []).map((c) => [c.ackId!, c]));
    let listed: Listed[] | string = [];
    for (;;) {
      listed = await listAll(`profileId=${encodeURIComponent(pid)}`);
      if (typeof listed === 'string') break;
      const ids = new Set(listed.map((e) => e.id));
      if ([...want.keys()].every((id) => ids.has(id)) || Date.now() >= deadline) break;
      await sleep(500);
    }
    if (typeof listed === 'string') { violate(`${compName(root)}: ${listed}`); return; }
    const n = new Map<string, number>();
    for (const e of listed) {
      n.set(e.id, (n.get(e.id) ?? 0) + 1);
      const c = want.get(e.id);
      if (!c) violate(`profile ${pid} (${compName(root)}) lists foreign event ${e.id} (${e.messageId}, ${wanted.has(e.id) ? `of ${find(keyOf(wanted.get(e.id)!.identifiers[0]!))}` : 'never acknowledged'})`);
      else if (e.messageId !== c.messageId) violate(`event ${e.id} listed with messageId ${e.messageId}, acknowledged for ${c.messageId}`);
    }
    for (const [id, c] of want) {
      const k = n.get(id) ?? 0;
      underProfile.set(id, k);
      if (k > 1) violate(`event ${id} (${c.messageId}) listed ${k} times under ${pid}`);
    }
  });

  // ---------------------------------------------------------------- missing: acknowledged, listed nowhere
  const missingEvents: MissingEvent[] = [];
  for (const [id, c] of wanted) {
    const named = byName.get(id) ?? 0;
    const under = underProfile.get(id) ?? 0;
    if (named > 1) violate(`event ${id} (${c.messageId}) listed ${named} times by event name`);
    if (named === 0 && under === 0) {
      const replayedBy = replays.filter((r) => r.replayOf === c.i && r.acked).length;
      missingEvents.push({ id, messageId: c.messageId, call: c.i, person: c.person, unit: c.unit, replayedBy });
    } else if (named === 0) violate(`event ${id} (${c.messageId}) is under its profile but not listed by event name`);
    else if (under === 0 && profileOf.has(find(keyOf(c.identifiers[0]!)))) violate(`event ${id} (${c.messageId}) is listed by name but not under its component's profile`);
  }
  missingEvents.sort((a, b) => a.call - b.call);
  for (const m of missingEvents) {
    violate(`missing ${m.id} (${m.messageId}, call ${m.call}, request ${m.unit}): acknowledged, listed nowhere ${settleMs / 1000} s after the storm`);
  }
  for (const id of byName.keys()) if (!wanted.has(id)) violate(`event ${id} listed by name but never acknowledged`);
  if (suppressed) violations.push(`... and ${suppressed} more violations`);

  const done = Date.now();
  return {
    seed: o.seed, orgId: org.org.id, calls: all.length,
    identifies: all.filter((c) => c.type === 'identify').length,
    tracks: all.filter((c) => c.type === 'track').length,
    replays: replays.length, requests, batches: units.filter((u) => u.batch).length, retries, statuses,
    ackedTracks: byMessage.size, components: components.size, profiles: profiles.size,
    stormMs, settleMs: settledMs, checkMs: done - checkStarted, durationMs: done - started,
    missing: missingEvents.length, missingEvents, violations, violationCount: violations.length - (suppressed ? 1 : 0) + suppressed,
  };
}
