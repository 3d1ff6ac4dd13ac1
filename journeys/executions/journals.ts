// The journals of a journey's latest executions, for the project tool's replay check: each with the
// trigger event and run id the server activates it with (the run id seeds Math.random), its journal,
// and the sleep or wait it is parked on, so a local build can be replayed exactly as the runner would.
import type pg from 'pg';

export interface JourneyJournals {
  key: string;
  enabled: boolean;
  /** Bundle digest of the newest ready version (what new executions run), or null. */
  bundle: string | null;
  /** Running and waiting executions of the journey (they keep the version they started on). */
  active: number;
  executions: Array<{
    id: string; runId: string; releaseId: string; versionId: string; bundle: string | null; status: string;
    event: Record<string, unknown>; journal: unknown[]; pending: { call: unknown; at: number } | null;
  }>;
}

/** Newest first, at most `limit`; null when the org has no journey of that key. */
export async function journeyJournals(pool: pg.Pool, orgId: string, key: string, limit: number): Promise<JourneyJournals | null> {
  const j = await pool.query(
    `SELECT j.enabled,
       (SELECT v.bundle_digest FROM versions v WHERE v.org_id = j.org_id AND v.kind = 'journey' AND v.key = j.key AND v.status = 'ready'
         ORDER BY v.push_seq DESC LIMIT 1) AS bundle,
       (SELECT count(*)::int FROM executions x WHERE x.org_id = j.org_id AND x.journey_key = j.key AND x.status IN ('running', 'waiting')) AS active
     FROM journeys j WHERE j.org_id = $1 AND j.key = $2`, [orgId, key]);
  const head = j.rows[0];
  if (!head) return null;
  const x = await pool.query(
    `SELECT x.id, x.run_id, x.release_id, x.version_id, x.status, x.event, x.journal, x.wait, v.bundle_digest
     FROM executions x LEFT JOIN versions v ON v.org_id = x.org_id AND v.id = x.version_id
     WHERE x.org_id = $1 AND x.journey_key = $2 ORDER BY x.id DESC LIMIT $3`, [orgId, key, limit]);
  return {
    key, enabled: head.enabled, bundle: head.bundle ?? null, active: head.active,
    executions: x.rows.map((r) => ({
      id: r.id, runId: r.run_id, releaseId: r.release_id, versionId: r.version_id, bundle: r.bundle_digest ?? null, status: r.status,
      event: r.event, journal: r.journal,
      // Only a parked execution has one: the sleep or waitForEvent it will record next.
      pending: r.wait && (r.status === 'waiting' || r.status === 'running') ? { call: r.wait.call, at: r.wait.position } : null,
    })),
  };
}
