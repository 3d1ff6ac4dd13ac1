// Which orgs' ingestion must wait for a change of their own. A segment create, update or delete
// holds the org's segment lock exclusively for its whole transaction, and filling the history of a
// newly named event reads every stored event of the org (seconds on an org with ~100k events); a
// promote or deny holds the org's catalog lock exclusively while it takes the name's held calls out
// of quarantine (as many as were held). A batch that took such a lock shared would wait that long,
// and with it every other org's calls in the batch and the batches queued behind it. So before each
// batch the worker asks, in one statement, which of its orgs' locks cannot be taken shared right
// now (held exclusively, or an exclusive request waiting: Postgres queues a new shared request
// behind a waiting exclusive one); those orgs' calls are left out of the batch and go back to the
// stream for a moment (BatchOutcome's `later`; stream/types.ts `IngestResults`).
//
// The answer is a moment's: a change may ask for the lock after the probe. So the workers' sessions
// never wait for these locks either (`handBackBusyOrgs`): taking one shared while a change holds or
// wants it fails the statement with `busy` (migration 41), and the driver (process.ts) hands that
// org's calls back while the rest of the batch goes on. The probe spares the failed statements in
// the common case; it runs in the worker thread, just before the batch.
import type pg from 'pg';
import { segmentLockKey } from './segments/mod.js';
import { catalogLockKeySql } from './governance/mod.js';

const PROBE = `SELECT COALESCE(array_agg(x.o), '{}') AS busy FROM unnest($1::text[], $2::bigint[]) AS x(o, k)
  WHERE NOT pg_try_advisory_xact_lock_shared(x.k) OR NOT pg_try_advisory_xact_lock_shared(${catalogLockKeySql('x.o')})`;

const NONE: ReadonlySet<string> = new Set();

export type BusyOrgs = (orgIds: string[]) => Promise<ReadonlySet<string>>;

/**
 * The probe on `pool`, one statement of its own (the shared locks it takes end with it). An error
 * (an outage) is the batch's: it fails and comes again, as any batch would.
 */
export function busyOrgs(pool: pg.Pool): BusyOrgs {
  return async (orgIds) => {
    if (orgIds.length === 0) return NONE;
    const r = await pool.query<{ busy: string[] }>(PROBE, [orgIds, orgIds.map(segmentLockKey)]);
    const busy = r.rows[0]!.busy;
    return busy.length === 0 ? NONE : new Set(busy);
  };
}

/**
 * Makes the sessions of `pool` (an ingestion worker's) fail with `busy` where they would wait for a
 * changing org's lock (headwater_org_lock_shared, migration 41). Set as each connection opens,
 * before the pool hands it out.
 */
export function handBackBusyOrgs(pool: pg.Pool): void {
  pool.on('connect', (c) => { c.query(`SET headwater.busy_orgs = 'hand_back'`).catch(() => {}); });
}
