// Membership over many profiles: the backfill of a created or updated segment, the periodic sweep
// of time windows (and of backfills a crash interrupted), and previews. Work goes in pages, each
// page its own transaction holding its profiles' rows, so ingestion waits at most one page.
import type pg from 'pg';
import type { Logger } from '../../lib/log.js';
import { tx } from '../store/postgres.js';
import { isConcurrencyFailure } from '../store/errors.js';
import type { EventRecord } from '../types.js';
import type { Queryable } from '../governance/types.js';
import { segmentLockKey, segmentOf } from './cache.js';
import { fillHistory, watchedNames, windowStart } from './history.js';
import { decide, transition, type Job } from './membership.js';
import { compile } from './predicates.js';
import { startPeriodic } from '../periodic.js';
import type { Compiled, Definition, ProfileFacts } from './types.js';

export interface JobDeps {
  pool: pg.Pool;
  /** Hands system events to the event stream and clears them from the outbox. */
  publish(events: EventRecord[]): Promise<void>;
  log: Logger;
  pageSize?: number;
}

const PAGE = 2000;
const PROFILE_COLS = 'id, org_id, app_id, source_id, environment, traits';
/** How long a backfill or sweep holds a segment before another process may take it over. */
export const LEASE = "interval '5 minutes'";

const factsOf = (r: any): ProfileFacts => ({ id: r.id, orgId: r.org_id, appId: r.app_id, sourceId: r.source_id, environment: r.environment, traits: r.traits });

/** Deadlocks and serialization failures (a page rolled back whole) are run again, up to 3 times. */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try { return await fn(); } catch (e) {
      if (attempt >= 3 || !isConcurrencyFailure(e)) throw e;
    }
  }
}

/**
 * One page for one segment at one version: the segment row is read FOR SHARE (an update or delete
 * waits for the page, and a page of an older version does nothing), then `select` locks profiles.
 */
async function page(d: JobDeps, segmentId: string, version: number, select: (c: pg.PoolClient, orgId: string) => Promise<any[]>) {
  const nowMs = Date.now();
  const out = await retrying(() => tx(d.pool, async (c) => {
    const s = await c.query('SELECT * FROM segments WHERE id = $1 FOR SHARE', [segmentId]);
    if (!s.rows[0] || s.rows[0].version !== version) return undefined;
    const seg = compile(segmentOf(s.rows[0]));
    const rows = await select(c, s.rows[0].org_id);
    const jobs: Job[] = rows.map((r) => ({ facts: factsOf(r), segs: [seg] }));
    const events = await transition(c, jobs, await decide(c, jobs, nowMs), { nowMs });
    return { events, last: rows.length ? (rows[rows.length - 1].id as string) : undefined };
  }));
  if (out?.events.length) await d.publish(out.events);
  return out;
}

/**
 * Decides one segment version over every live profile of its org, in id order. Returns false when
 * a newer version (or a delete) superseded it. Idempotent: a second run writes nothing new.
 */
export async function backfill(d: JobDeps, segmentId: string, version: number): Promise<boolean> {
  const size = d.pageSize ?? PAGE;
  let after = '';
  for (;;) {
    const out = await page(d, segmentId, version, async (c, orgId) => (await c.query(
      `SELECT ${PROFILE_COLS} FROM profiles WHERE org_id = $1 AND merged_into IS NULL AND id > $2 ORDER BY id LIMIT $3 FOR UPDATE`,
      [orgId, after, size])).rows);
    if (!out) return false;
    if (out.last === undefined) break;
    after = out.last;
  }
  await d.pool.query('UPDATE segments SET computed_at = now(), lease_until = NULL WHERE id = $1 AND version = $2', [segmentId, version]);
  return true;
}

/**
 * The windows of one segment moved from `fromMs` to `toMs`: only profiles with an event of a
 * windowed name whose timestamp crossed a window's edge in between can change.
 */
async function sweepWindows(d: JobDeps, c: Compiled, fromMs: number, toMs: number): Promise<boolean> {
  const ids = new Set<string>();
  for (const p of c.events) {
    if (p.withinDays === undefined) continue;
    const r = await d.pool.query<{ profile_id: string }>(
      `SELECT DISTINCT h.profile_id FROM event_history h JOIN profiles p ON p.id = h.profile_id
       WHERE h.name = $1 AND h.ts >= $2 AND h.ts < $3 AND p.org_id = $4 AND p.merged_into IS NULL`,
      [p.name, windowStart(fromMs, p.withinDays), windowStart(toMs, p.withinDays), c.seg.orgId]);
    for (const row of r.rows) ids.add(row.profile_id);
  }
  const list = [...ids].sort();
  const size = d.pageSize ?? PAGE;
  for (let i = 0; i < list.length; i += size) {
    const chunk = list.slice(i, i + size);
    const out = await page(d, c.seg.id, c.seg.version, async (cl) => (await cl.query(
      `SELECT ${PROFILE_COLS} FROM profiles WHERE id = ANY($1) AND merged_into IS NULL ORDER BY id FOR UPDATE`, [chunk])).rows);
    if (!out) return false;
  }
  return true;
}

/**
 * One pass over every segment: finishes backfills nobody holds (a crash interrupted them), and
 * moves windowed segments to now. Several processes may sweep: a segment is taken with a lease.
 */
export async function sweepOnce(d: JobDeps): Promise<{ swept: number; backfilled: number }> {
  const rows = await d.pool.query('SELECT * FROM segments WHERE computed_at IS NULL OR definition::text LIKE \'%"withinDays"%\' ORDER BY id');
  let swept = 0;
  let backfilled = 0;
  for (const row of rows.rows) {
    const c = compile(segmentOf(row));
    if (row.computed_at !== null && !c.windowed) continue;
    const toMs = Date.now();
    const claim = await d.pool.query(
      `UPDATE segments SET lease_until = now() + ${LEASE}
       WHERE id = $1 AND version = $2 AND (lease_until IS NULL OR lease_until < now()) RETURNING computed_at, swept_at`,
      [row.id, row.version]);
    const got = claim.rows[0];
    if (!got) continue;
    try {
      if (got.computed_at === null) {
        if (await backfill(d, row.id, row.version)) backfilled++;
        continue;
      }
      const fromMs = new Date(got.swept_at).getTime();
      if (await sweepWindows(d, c, fromMs, toMs)) {
        await d.pool.query('UPDATE segments SET swept_at = $3 WHERE id = $1 AND version = $2', [row.id, row.version, new Date(toMs).toISOString()]);
        swept++;
      }
    } finally {
      await d.pool.query('UPDATE segments SET lease_until = NULL WHERE id = $1 AND version = $2', [row.id, row.version]);
    }
  }
  return { swept, backfilled };
}

export interface Sweeper { close(): Promise<void> }

/** Runs `sweepOnce` every `intervalMs` (never two at once in a process). */
export function startSweeper(d: JobDeps, intervalMs: number): Sweeper {
  return startPeriodic(intervalMs, () => sweepOnce(d), d.log, 'segment sweep failed');
}

export interface Preview { memberCount: number; members: string[]; scanned: number; truncated: boolean }

/**
 * Decides a draft over at most `cap` live profiles of the org (of its apps, when it names some).
 * History is kept only for event names some segment names: for the draft's other names it is filled
 * from the stored events inside a transaction that is rolled back, under the org's shared segment
 * lock (no segment change fills them meanwhile; ingestion writes none of them).
 */
export async function preview(pool: pg.Pool, orgId: string, definition: Definition, cap: number): Promise<Preview> {
  const c = compile({ id: 'preview', orgId, name: '', definition, environments: ['development', 'production'], version: 0 });
  if (c.eventNames.size === 0) return previewOn(pool, c, cap);
  return tx(pool, async (cl) => {
    await cl.query('SELECT pg_advisory_xact_lock_shared($1::bigint)', [segmentLockKey(orgId)]);
    const watched = await watchedNames(cl, orgId);
    await fillHistory(cl, orgId, [...c.eventNames].filter((n) => !watched.has(n)));
    return previewOn(cl, c, cap);
  }, () => false);
}

async function previewOn(q: Queryable, c: Compiled, cap: number): Promise<Preview> {
  const args: unknown[] = [c.seg.orgId, cap + 1];
  let where = 'org_id = $1 AND merged_into IS NULL';
  if (c.apps) { args.push([...c.apps]); where += ` AND app_id = ANY($${args.length})`; }
  const r = await q.query(`SELECT ${PROFILE_COLS} FROM profiles WHERE ${where} ORDER BY id LIMIT $2`, args);
  const truncated = r.rows.length > cap;
  const rows = truncated ? r.rows.slice(0, cap) : r.rows;
  const members: string[] = [];
  const nowMs = Date.now();
  for (let i = 0; i < rows.length; i += PAGE) {
    const jobs: Job[] = rows.slice(i, i + PAGE).map((row) => ({ facts: factsOf(row), segs: [c] }));
    const desired = await decide(q, jobs, nowMs);
    jobs.forEach((j, k) => { if (desired[k]![0]) members.push(j.facts.id); });
  }
  return { memberCount: members.length, members, scanned: rows.length, truncated };
}
