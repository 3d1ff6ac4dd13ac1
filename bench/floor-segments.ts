// The floor's segments (floor.ts --segments, PostgreSQL only): the least a service keeping the
// contract does per tracked event when the org has the bench's 50 segments (bench/segments.ts), so
// that headwater's "track with 50 segments vs without" can be read against the same ratio of the
// floor. Membership is decided synchronously, in the writing transaction, before the answer (the
// contract's "recomputed synchronously on every write"), and each transition writes its member row
// and its system event in that transaction.
//
// The least work, as a purpose-built store would do it: per profile and event name, a day count
// and an all-time count (upserts), the memberships decided by that name kept in the all-time row (the
// row lock serializes one profile's decisions), and a members table keyed for listing a segment's
// members. Only segments naming the batch's event names are decided (a track call changes nothing
// else). Two round trips a batch: BEGIN, the writes and what the decisions read (the window counts
// read the other days from the snapshot, today's from the upsert); then the transitions with the
// COMMIT (or the COMMIT alone). A profile's batches take turns (an advisory lock per profile, taken
// in one order first), as headwater's lock the profile rows. A track call's profile is its first
// identifier (the floor resolves no identity), the day its receipt's (UTC).
import pg from 'pg';
import { traitMatches, type EventPredicate, type Predicate, type TraitPredicate } from '../pipeline/segments/mod.js';
import type { CallResult } from '../pipeline/types.js';
import { jsonLiteral, quoteLiteral } from '../pipeline/store/postgres.js';
import { benchSegments } from './segments.js';

interface Seg { id: string; all: boolean; predicates: Predicate[] }
export interface SegTrack { key: string; event: Record<string, unknown>; profile: string; name: string; day: string }


export function segmentTables(table: string): string {
  return `CREATE TABLE ${table}_counts (org_id text NOT NULL, profile text NOT NULL, name text NOT NULL, day date NOT NULL, n int NOT NULL,
      PRIMARY KEY (org_id, profile, name, day));
    CREATE TABLE ${table}_totals (org_id text NOT NULL, profile text NOT NULL, name text NOT NULL, n bigint NOT NULL, segs text[] NOT NULL DEFAULT '{}',
      PRIMARY KEY (org_id, profile, name));
    CREATE TABLE ${table}_members (org_id text NOT NULL, segment text NOT NULL, profile text NOT NULL, entered_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, segment, profile))`;
}
export const segmentDrop = (table: string) => `, ${table}_counts, ${table}_totals, ${table}_members`;

/** One session of the store, held for a transaction: `query` runs SQL text (statements without parameters) and answers each statement's rows. */
export interface SegmentSession { query(text: string): Promise<Array<Array<Record<string, any>>>>; release(): void }

/** Sessions on a pg pool. */
export function poolSessions(pool: pg.Pool): () => Promise<SegmentSession> {
  return async () => {
    const c = await pool.connect();
    return {
      query: async (text) => {
        const out = await c.query(text) as unknown as pg.QueryResult | pg.QueryResult[];
        return (Array.isArray(out) ? out : [out]).map((r) => r.rows);
      },
      release: () => c.release(),
    };
  };
}

export function floorSegments(o: { open: () => Promise<SegmentSession>; table: string; org: string; app: string; prefix: string }) {
  const segs: Seg[] = benchSegments().map((s, i) => {
    const d = s.definition as { match?: string; predicates: Predicate[] };
    return { id: `seg_${i}`, all: d.match !== 'any', predicates: d.predicates };
  });
  const byName = new Map<string, Seg[]>();
  for (const s of segs) {
    for (const n of new Set(s.predicates.filter((p): p is EventPredicate => p.kind === 'event').map((p) => p.name))) {
      if (!byName.has(n)) byName.set(n, []);
      byName.get(n)!.push(s);
    }
  }
  const windows = [...new Set(segs.flatMap((s) => s.predicates.flatMap((p) => (p.kind === 'event' && p.withinDays ? [p.withinDays] : []))))].sort((a, b) => a - b);
  const t = o.table;
  let seq = 0;

  /** The batch's new events (its messageIds distinct), stored and decided; answers as floor.ts's. */
  return async function store(calls: SegTrack[]): Promise<CallResult[]> {
    const today = calls[0]!.day;
    const rows = calls.map((c) => ({ m: c.key, r: c.event, u: c.profile, e: c.name, d: c.day }));
    const org = quoteLiteral(o.org);
    const day = `${quoteLiteral(today)}::date`;
    const sums = windows.map((w) => `(SELECT coalesce(sum(k.n), 0) FROM ${t}_counts k WHERE k.org_id = ${org} AND k.profile = s.profile AND k.name = s.name
          AND k.day > ${day} - ${w} AND k.day <> ${day}) + coalesce(c.n, 0)`);
    // One profile's batches take turns, locked in one order (two batches upserting the same rows
    // in different orders deadlocked: Postgres ended one after its 1-s deadlock_timeout).
    const profiles = [...new Set(calls.map((x) => x.profile))];
    const first = `BEGIN; SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT DISTINCT hashtext(${org} || chr(1) || u)::bigint AS k
        FROM jsonb_array_elements_text(${jsonLiteral(profiles)}) AS p(u) ORDER BY 1) l;
      WITH x AS (SELECT * FROM jsonb_to_recordset(${jsonLiteral(rows)}) AS x(m text, r jsonb, u text, e text, d date)),
      i AS (INSERT INTO ${t} (org_id, app_id, message_id, result) SELECT ${org}, ${quoteLiteral(o.app)}, m, r FROM x ON CONFLICT DO NOTHING RETURNING message_id),
      nx AS (SELECT x.* FROM x JOIN i ON i.message_id = x.m),
      c AS (INSERT INTO ${t}_counts AS c (org_id, profile, name, day, n) SELECT ${org}, u, e, d, count(*) FROM nx GROUP BY u, e, d
            ON CONFLICT (org_id, profile, name, day) DO UPDATE SET n = c.n + EXCLUDED.n RETURNING profile, name, day, n),
      s AS (INSERT INTO ${t}_totals AS s (org_id, profile, name, n) SELECT ${org}, u, e, count(*) FROM nx GROUP BY u, e
            ON CONFLICT (org_id, profile, name) DO UPDATE SET n = s.n + EXCLUDED.n RETURNING profile, name, n, segs)
      SELECT (SELECT coalesce(array_agg(message_id), '{}') FROM i) AS ids,
             (SELECT coalesce(json_agg(json_build_array(s.profile, s.name, s.n, s.segs${sums.map((x) => `, ${x}`).join('')})), '[]')
                FROM s LEFT JOIN c ON c.profile = s.profile AND c.name = s.name AND c.day = ${day}) AS state`;
    const c = await o.open();
    try {
      const res = await c.query(first);
      const { ids, state } = res[2]![0] as { ids: string[]; state: Array<[string, string, number, string[], ...number[]]> };
      const entered: Array<{ s: string; u: string }> = [];
      const exited: Array<{ s: string; u: string }> = [];
      const kept: Array<{ u: string; e: string; segs: string[] }> = [];
      const events: Array<{ id: string; ev: unknown }> = [];
      const at = new Date().toISOString();
      for (const [profile, name, total, was, ...inWindow] of state) {
        const count = (p: EventPredicate) => Number(p.withinDays ? inWindow[windows.indexOf(p.withinDays)] : total);
        const holds = (p: Predicate) => (p.kind === 'trait' ? traitMatches(p as TraitPredicate, {}) : (count(p) >= p.atLeast) === (p.op === 'performed'));
        const now = new Set(was);
        let changed = false;
        for (const s of byName.get(name) ?? []) {
          const member = s.all ? s.predicates.every(holds) : s.predicates.some(holds);
          if (member === now.has(s.id)) continue;
          changed = true;
          if (member) { now.add(s.id); entered.push({ s: s.id, u: profile }); } else { now.delete(s.id); exited.push({ s: s.id, u: profile }); }
          const id = `sys_${o.prefix}${(++seq).toString(36)}`;
          events.push({ id, ev: { id, event: member ? 'system.segment_entered' : 'system.segment_exited', profileId: profile, properties: { segmentId: s.id }, timestamp: at } });
        }
        if (changed) kept.push({ u: profile, e: name, segs: [...now] });
      }
      if (kept.length === 0) await c.query('COMMIT');
      else {
        await c.query(`WITH k AS (SELECT * FROM jsonb_to_recordset(${jsonLiteral(kept)}) AS k(u text, e text, segs text[])),
            up AS (UPDATE ${t}_totals s SET segs = k.segs FROM k WHERE s.org_id = ${org} AND s.profile = k.u AND s.name = k.e),
            en AS (INSERT INTO ${t}_members (org_id, segment, profile) SELECT ${org}, x.s, x.u FROM jsonb_to_recordset(${jsonLiteral(entered)}) AS x(s text, u text)),
            ex AS (DELETE FROM ${t}_members m USING jsonb_to_recordset(${jsonLiteral(exited)}) AS x(s text, u text) WHERE m.org_id = ${org} AND m.segment = x.s AND m.profile = x.u),
            ev AS (INSERT INTO ${t} (org_id, app_id, message_id, result) SELECT ${org}, ${quoteLiteral(o.app)}, x.id, x.ev FROM jsonb_to_recordset(${jsonLiteral(events)}) AS x(id text, ev jsonb))
          SELECT 1; COMMIT`);
      }
      const inserted = new Set(ids);
      // A replay's original is not read back here: the segment scenario sends fresh messageIds.
      return calls.map((x) => (inserted.has(x.key) ? { status: 201, data: x.event } : { status: 200, data: null }) as CallResult);
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {});
      throw err;
    } finally { c.release(); }
  };
}
