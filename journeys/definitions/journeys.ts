// Journeys: one per journey key of an org, created when its first version is filed. What a journey
// answers (app, trigger, purpose) comes from its latest `ready` version, the one new executions
// run, or from its latest version while none is ready. Only PATCH turns a journey on or off.
import type pg from 'pg';
import { tx } from '../../pipeline/store/postgres.js';

const JOURNEY_SELECT = `
  SELECT j.org_id, j.key, j.enabled, j.updated_at,
         r.id AS ready_id, r.push_id AS ready_push, r.app_id AS ready_app, r.manifest AS ready_manifest,
         l.app_id AS last_app, l.manifest AS last_manifest,
         l.id AS last_id, l.status AS last_status, l.error AS last_error, l.pushed_at AS last_pushed_at
  FROM journeys j
  LEFT JOIN LATERAL (SELECT id, push_id, app_id, manifest FROM versions v
    WHERE v.org_id = j.org_id AND v.kind = 'journey' AND v.key = j.key AND v.status = 'ready'
    ORDER BY v.push_seq DESC LIMIT 1) r ON true
  LEFT JOIN LATERAL (SELECT id, app_id, manifest, status, error, pushed_at FROM versions v
    WHERE v.org_id = j.org_id AND v.kind = 'journey' AND v.key = j.key
    ORDER BY v.push_seq DESC LIMIT 1) l ON true`;

export interface Journey {
  key: string; orgId: string; appId: string; enabled: boolean; trigger: unknown; purpose: string;
  versionId: string | null; pushId: string | null; updatedAt: string;
  latestVersion: LatestVersion | null;
}

/** The newest version of a journey's key whatever its status: what the last push made of it. */
export interface LatestVersion { id: string; status: 'compiling' | 'ready' | 'failed'; error: string | null; createdAt: string }

const journeyOut = (r: any): Journey => {
  const m = r.ready_manifest ?? r.last_manifest ?? {};
  return {
    key: r.key, orgId: r.org_id, appId: r.ready_app ?? r.last_app, enabled: r.enabled,
    trigger: m.trigger, purpose: m.purpose, versionId: r.ready_id ?? null, pushId: r.ready_push ?? null,
    updatedAt: r.updated_at,
    latestVersion: r.last_id ? { id: r.last_id, status: r.last_status, error: r.last_error ?? null, createdAt: r.last_pushed_at } : null,
  };
};

export async function getJourney(db: pg.Pool | pg.PoolClient, orgId: string, key: string): Promise<Journey | null> {
  const r = await db.query(`${JOURNEY_SELECT} WHERE j.org_id = $1 AND j.key = $2`, [orgId, key]);
  return r.rows[0] ? journeyOut(r.rows[0]) : null;
}

/** In key order; `afterKey` continues after a page. Fetches `limit + 1` to tell whether more exist. */
export async function listJourneys(pool: pg.Pool, orgId: string, o: { afterKey?: string; limit: number }): Promise<Journey[]> {
  const args: unknown[] = [orgId];
  let where = 'j.org_id = $1';
  if (o.afterKey !== undefined) { args.push(o.afterKey); where += ` AND j.key > $${args.length}`; }
  args.push(o.limit + 1);
  const r = await pool.query(`${JOURNEY_SELECT} WHERE ${where} ORDER BY j.key LIMIT $${args.length}`, args);
  return r.rows.map(journeyOut);
}

export type SetEnabled = { journey: Journey } | { notFound: true } | { notReady: true };

/** Enables or disables a journey; enabling needs a `ready` version. */
export async function setJourneyEnabled(pool: pg.Pool, orgId: string, key: string, enabled: boolean): Promise<SetEnabled> {
  return tx(pool, async (c) => {
    const lock = await c.query('SELECT enabled FROM journeys WHERE org_id = $1 AND key = $2 FOR UPDATE', [orgId, key]);
    if (!lock.rows[0]) return { notFound: true as const };
    if (enabled) {
      const ready = await c.query(`SELECT 1 FROM versions WHERE org_id = $1 AND kind = 'journey' AND key = $2 AND status = 'ready' LIMIT 1`, [orgId, key]);
      if (!ready.rows[0]) return { notReady: true as const };
    }
    await c.query('UPDATE journeys SET enabled = $3, updated_at = now() WHERE org_id = $1 AND key = $2', [orgId, key, enabled]);
    // The trigger index of every process reloads this org's journeys.
    await c.query('UPDATE orgs SET journeys_version = journeys_version + 1 WHERE id = $1', [orgId]);
    return { journey: (await getJourney(c, orgId, key))! };
  });
}
