// Journey-runtime fixtures: deploy a journey from a source string (push, compile, enable), a
// profile that consents to a purpose, and polling of executions through the public routes.
import { call, identifyCall, poll, trackCall, uid, type AppFixture, type Res, type TestServer } from './server.js';
import { bundle, journeyEntry, manifest, push, tarball, templateEntry, upload } from './project.js';

export interface JourneySpec {
  key: string;
  /** The handler body: `ctx` is in scope. */
  body: string;
  trigger?: Record<string, unknown>;
  purpose?: string;
  enrollment?: Record<string, unknown>;
  /** Module-level code before the definition. */
  extra?: string;
  /** More journey options (exitOn, goal, holdout ...), in both the definition and the manifest entry. */
  options?: Record<string, unknown>;
}

export const journeyCode = (j: JourneySpec) => `import { journey } from 'headwater/sdk';\n${j.extra ?? ''}\n` +
  `export default journey(${JSON.stringify({ key: j.key, trigger: j.trigger ?? { event: `${j.key}_go` }, purpose: j.purpose ?? 'onboarding', ...(j.enrollment ? { enrollment: j.enrollment } : {}), ...j.options })}, async (ctx) => {\n${j.body}\n});`;

export interface TemplateSpec {
  key: string; render: string; propsSchema?: Record<string, unknown>;
  /** Default transactional. */
  sendClass?: 'marketing' | 'transactional';
  /** A whole TypeScript template module (e.g. the scaffold's), used instead of one built around `render`. */
  code?: string;
}

/** Pushes the journeys (and templates), waits for their compile, and enables the journeys. */
export async function deployJourneys(s: TestServer, fx: AppFixture, journeys: JourneySpec[], templates: TemplateSpec[] = [], o: { allowFailed?: boolean } = {}) {
  const admin = fx.org.sessions.admin;
  const src = await upload(s, admin, await tarball({ 'headwater.json': '{}' }), 'source');
  const entries = [];
  for (const j of journeys) {
    entries.push(journeyEntry(j.key, await upload(s, admin, await bundle(journeyCode(j))), {
      trigger: j.trigger ?? { event: `${j.key}_go` }, purpose: j.purpose ?? 'onboarding', ...(j.enrollment ? { enrollment: j.enrollment } : {}), ...j.options,
    }));
  }
  const tpls = [];
  for (const t of templates) {
    const code = t.code ?? `import { template } from 'headwater/sdk';\nexport default template({ key: ${JSON.stringify(t.key)}, sendClass: ${JSON.stringify(t.sendClass ?? 'transactional')}, verifyLink: false }, ${t.render});`;
    tpls.push(templateEntry(t.key, await upload(s, admin, await bundle(code, t.code ? 'ts' : 'js')), { ...(t.propsSchema ? { propsSchema: t.propsSchema } : {}), ...(t.sendClass ? { sendClass: t.sendClass } : {}) }));
  }
  const r = await push(s, admin, fx.org.org.id, fx.app.id, manifest({ journeys: entries, templates: tpls, source: src }));
  if (r.status !== 201) throw new Error(`push failed: ${r.status} ${r.text}`);
  const done = await poll(() => call(s.url, 'GET', `/v1/pushes/${r.body.data.id}`, { token: admin }),
    (x) => x.status === 200 && x.body.data.compiledEntries === x.body.data.totalEntries, 90_000);
  if (o.allowFailed) return done.body.data;
  for (const v of done.body.data.versions) if (v.status !== 'ready') throw new Error(`version ${v.key} ${v.status}: ${v.error}`);
  for (const j of journeys) {
    const e = await call(s.url, 'PATCH', `/v1/journeys/${j.key}`, { token: admin, body: { data: { enabled: true } } });
    if (e.status !== 200) throw new Error(`enable ${j.key}: ${e.status} ${e.text}`);
  }
  return done.body.data;
}

/** A profile with `userId` (and `identifiers`) that consents to `purposes` (and holds `traits`); answers the Profile. */
export async function consenting(s: TestServer, fx: AppFixture, o: { userId?: string; purposes?: Record<string, boolean>; traits?: Record<string, unknown>; identifiers?: Record<string, string> } = {}) {
  const r = await identifyCall(s, fx, {
    identifiers: { userId: o.userId ?? uid('u'), ...o.identifiers }, traits: { ...o.traits, consent: o.purposes ?? { onboarding: true } },
  });
  if (r.status !== 200) throw new Error(`identify: ${r.status} ${r.text}`);
  return r.body.data;
}

export const fire = (s: TestServer, fx: AppFixture, userId: string, event: string, properties: Record<string, unknown> = {}) =>
  trackCall(s, fx, { identifiers: { userId }, event, properties });

export const executions = (s: TestServer, token: string, query: Record<string, string> = {}): Promise<Res> =>
  call(s.url, 'GET', `/v1/executions?${new URLSearchParams(query)}`, { token });

export const execution = (s: TestServer, token: string, id: string): Promise<Res> => call(s.url, 'GET', `/v1/executions/${id}`, { token });

/** Polls the executions matching `query` until `done` holds for the list. */
export const untilExecutions = (s: TestServer, token: string, query: Record<string, string>, done: (list: any[]) => boolean, timeoutMs = 30_000) =>
  poll(() => executions(s, token, query), (r) => r.status === 200 && done(r.body.data), timeoutMs, 150).then((r) => r.body.data as any[]);

export const ended = (x: { status: string } | undefined) => !!x && (x.status === 'completed' || x.status === 'failed' || x.status === 'cancelled');

/** Every event named `name` of the org, counted by profile (pages through the list). */
export async function eventsByProfile(s: TestServer, token: string, name: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let cursor = '';
  for (;;) {
    const r = await call(s.url, 'GET', `/v1/events?event=${name}&limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token });
    for (const e of r.body.data) counts.set(e.profileId, (counts.get(e.profileId) ?? 0) + 1);
    if (!r.body.meta.hasMore) return counts;
    cursor = r.body.meta.nextCursor;
  }
}
