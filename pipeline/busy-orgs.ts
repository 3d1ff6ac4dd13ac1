// Which orgs' ingestion must wait for a change of their own. A segment create, update or delete
// holds the org's segment lock exclusively for its whole transaction, and filling the history of a
// newly named event reads every stored event of the org (seconds on an org with ~100k events); a
// promote or deny holds the org's catalog lock exclusively while it takes the name's held calls out
// of quarantine (as many as were held). A batch that took such a lock shared would wait that long,
// and with it every other org's calls in the batch and the batches queued behind it.
//
// So the ingestion workers' sessions never wait for these locks (`handBackBusyOrgs`): taking one
// shared while a change holds it or wants it (Postgres queues a new shared request behind a waiting
// exclusive one) fails the statement with `busy` (migration 41), and the driver (process.ts) hands
// that org's calls back to the stream for a moment (BatchOutcome's `later`; stream/types.ts
// `IngestResults`) while the rest of the batch goes on.
//
// A failed statement wastes its work, and a change lasts seconds, so once an org was found busy the
// worker asks before each batch of its calls, in one statement, whether it still is (`BusyOrgs`),
// and leaves its calls out while it is. Orgs not found busy lately are not asked about: that
// question cost every batch a round trip to the store (1.0-1.6 ms of a 6-11 ms batch of single
// track calls at 64 connections), for changes that are rare.
import type pg from 'pg';
import { segmentLockKey } from './segments/mod.js';
import { catalogLockKeySql } from './governance/mod.js';

const PROBE = `SELECT COALESCE(array_agg(x.o), '{}') AS busy FROM unnest($1::text[], $2::bigint[]) AS x(o, k)
  WHERE NOT pg_try_advisory_xact_lock_shared(x.k) OR NOT pg_try_advisory_xact_lock_shared(${catalogLockKeySql('x.o')})`;

const NONE: ReadonlySet<string> = new Set();

/** How long an org found busy is asked about before its batches (each answer "busy" renews it). */
export const BUSY_WATCH_MS = 5_000;
/** Orgs watched at most; past that, those whose watch ended are forgotten. */
const WATCHED_MAX = 1_000;

export interface BusyOrgs {
  /** The orgs of `orgIds` whose changes are under way; asks the store about watched orgs only. */
  check(orgIds: string[]): Promise<ReadonlySet<string>>;
  /** Orgs a batch found busy (a statement failed `busy`): watched from now on. */
  saw(orgIds: Iterable<string>): void;
}

/**
 * The watch of one worker thread, asking on `pool` (one statement of its own; the shared locks it
 * takes end with it). An error (an outage) is the batch's: it fails and comes again, as any batch
 * would. `now` is for tests.
 */
export function busyOrgs(pool: pg.Pool, now: () => number = Date.now): BusyOrgs {
  /** Org id -> until when its batches ask first. */
  const watched = new Map<string, number>();
  const watch = (orgId: string, t: number) => {
    watched.set(orgId, t + BUSY_WATCH_MS);
    if (watched.size > WATCHED_MAX) for (const [o, until] of watched) if (until <= t) watched.delete(o);
  };
  return {
    async check(orgIds) {
      if (watched.size === 0) return NONE;
      const t = now();
      const ask: string[] = [];
      for (const o of orgIds) {
        const until = watched.get(o);
        if (until === undefined) continue;
        if (until > t) ask.push(o);
        else watched.delete(o);
      }
      if (ask.length === 0) return NONE;
      const r = await pool.query<{ busy: string[] }>(PROBE, [ask, ask.map(segmentLockKey)]);
      const found = new Set(r.rows[0]!.busy);
      // Still busy: watched on; done: forgotten (the next change is found by its failed statement).
      for (const o of ask) if (found.has(o)) watch(o, t); else watched.delete(o);
      return found.size === 0 ? NONE : found;
    },
    saw(orgIds) {
      const t = now();
      for (const o of orgIds) watch(o, t);
    },
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
