// Segment benchmarks (issue: segments): 50 segments defined in the org under track load, and the
// time to create a segment over 100,000 existing profiles in Postgres mode.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

type Http = (base: string, method: string, path: string, token?: string, body?: unknown) => Promise<{ status: number; body: any; text: string }>;

/**
 * A mix of 50 segments: 15 on traits only, 15 on the bench's tracked event ("Page Viewed": counts
 * over all history, within 7 days, and "not in 30 days", at thresholds a marketer would pick), 10
 * on events the bench never sends, 10 mixing a trait with an event. The bench gives each of its
 * 1,000 users 15-20 events per run, so its profiles live where thresholds are densest (about one
 * transition, and one system event, per two tracked events): a heavy case, not a gentle one.
 */
export function benchSegments(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const T = (name: string, op: string, value?: unknown) => (value === undefined ? { kind: 'trait', name, op } : { kind: 'trait', name, op, value });
  const E = (name: string, op: string, atLeast = 1, withinDays?: number) => ({ kind: 'event', name, op, atLeast, ...(withinDays ? { withinDays } : {}) });
  const plans = ['free', 'pro', 'team', 'enterprise', 'trial'];
  for (let i = 0; i < 15; i++) {
    const p = [T('plan', 'eq', plans[i % 5]), T('seats', 'gte', i), T('email', i % 2 ? 'exists' : 'notExists'), T('country', 'neq', 'FR'), T('tags', 'contains', `t${i}`)][i % 5]!;
    out.push({ name: `trait-${i}`, definition: { predicates: [p] } });
  }
  const levels = [1, 5, 20, 50, 100];
  for (let i = 0; i < 5; i++) out.push({ name: `viewed-${levels[i]}`, definition: { predicates: [E('Page Viewed', 'performed', levels[i])] } });
  for (let i = 0; i < 5; i++) out.push({ name: `viewed-${3 * levels[i]!}-7d`, definition: { predicates: [E('Page Viewed', 'performed', 3 * levels[i]!, 7)] } });
  for (let i = 0; i < 5; i++) out.push({ name: `not-viewed-${levels[i]}-30d`, definition: { predicates: [E('Page Viewed', 'notPerformed', levels[i], 30)] } });
  for (let i = 0; i < 10; i++) out.push({ name: `other-${i}`, definition: { predicates: [E(`Order ${i}`, 'performed', 1, 30)] } });
  for (let i = 0; i < 10; i++) {
    out.push({ name: `mixed-${i}`, definition: { match: i % 2 ? 'any' : 'all', predicates: [T('plan', 'eq', plans[i % 5]), E(i % 2 ? 'Page Viewed' : `Order ${i}`, 'performed', 10 * (i + 1))] } });
  }
  return out;
}

export async function defineSegments(http: Http, url: string, admin: string): Promise<void> {
  for (const s of benchSegments()) {
    const r = await http(url, 'POST', '/v1/segments', admin, { data: s });
    if (r.status !== 201) throw new Error(`segment create: ${r.status} ${r.text.slice(0, 300)}`);
  }
}

export interface CreateBench { profiles: number; members: number; seconds: number; note?: string }

/**
 * Writes `n` profiles (traits and one stored event each) straight into the bench database, then
 * times POST /v1/segments over them: what is measured is the create (with the fill of its event
 * name's history), not the setup.
 */
export async function segmentCreateBench(http: Http, url: string, databaseUrl: string, f: { orgId: string; appId: string; sourceId: string; admin: string }, n = 100_000): Promise<CreateBench> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const run = randomBytes(4).toString('hex');
    for (let i = 0; i < n; i += 10_000) {
      const k = Math.min(10_000, n - i);
      await c.query(
        `INSERT INTO profiles (id, org_id, app_id, source_id, environment, traits, created_at, updated_at)
         SELECT 'prf_bench_' || $5::text || '_' || lpad(g::text, 7, '0'), $1::text, $2::text, $3::text, 'production',
                jsonb_build_object('score', g % 100, 'plan', CASE WHEN g % 3 = 0 THEN 'pro' ELSE 'free' END), now(), now()
         FROM generate_series($4::int, $4::int + $6::int - 1) AS g`, [f.orgId, f.appId, f.sourceId, i, run, k]);
      // Stored answers of track calls, as ingestion leaves them: the create fills the history of
      // 'Signup' (named by no segment before) from them, and that is part of what is timed. Stored
      // long ago, so that no landing recovery or reconciliation window takes them for recent calls.
      await c.query(
        `INSERT INTO messages (org_id, app_id, message_id, kind, created_at, result)
         SELECT $1::text, $2::text, 'm_bench_' || $4::text || '_' || g, 'track', now() - interval '400 days', jsonb_build_object('event', jsonb_build_object(
                  'id', 'evt_bench_' || $4::text || '_' || g, 'orgId', $1::text, 'appId', $2::text, 'sourceId', $3::text,
                  'profileId', 'prf_bench_' || $4::text || '_' || lpad(g::text, 7, '0'), 'environment', 'production',
                  'event', 'Signup', 'properties', '{}'::jsonb, 'timestamp', now() - make_interval(days => g % 60),
                  'receivedAt', now(), 'messageId', 'm_bench_' || $4::text || '_' || g))
         FROM generate_series($5::int, $5::int + $6::int - 1) AS g`, [f.orgId, f.appId, f.sourceId, run, i, k]);
    }
    await c.query('ANALYZE profiles'); await c.query('ANALYZE messages');
  } finally { await c.end(); }
  const t0 = Date.now();
  const r = await http(url, 'POST', '/v1/segments', f.admin, { data: {
    name: 'bench create', definition: { predicates: [
      { kind: 'trait', name: 'score', op: 'gte', value: 50 },
      { kind: 'event', name: 'Signup', op: 'performed', withinDays: 30 },
    ] },
  } });
  const seconds = (Date.now() - t0) / 1000;
  if (r.status !== 201) return { profiles: n, members: 0, seconds, note: `create answered ${r.status} ${r.text.slice(0, 200)}` };
  return { profiles: n, members: r.body.data.memberCount, seconds };
}
