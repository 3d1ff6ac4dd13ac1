// SQL shared by every catalog writer.
import type { Queryable } from './types.js';

/** Every catalog or settings change bumps this once, so cached snapshots notice. */
export async function bumpCatalogVersion(q: Queryable, orgId: string): Promise<void> {
  await q.query('UPDATE orgs SET catalog_version = catalog_version + 1 WHERE id = $1', [orgId]);
}

// One transaction-scoped advisory lock per org serializes promote/deny (exclusive) against holds
// (shared): a hold either commits before a promote drains the queue, or runs after it and sees the
// name classified. Shared holds do not wait for each other.
/** The lock's key in SQL, of the org id `expr` evaluates to. */
export const catalogLockKeySql = (expr: string) => `hashtextextended('headwater:catalog:' || ${expr}::text, 0)`;
const KEY = catalogLockKeySql('$1');

/** Exclusive; call first in the transaction, before any other lock is taken. */
export async function lockCatalogExclusive(q: Queryable, orgId: string): Promise<void> {
  await q.query(`SELECT pg_advisory_xact_lock(${KEY})`, [orgId]);
}

/**
 * Shared, for several orgs at once (in sorted order, so two callers never wait on each other). On
 * the ingestion workers' connections a held or requested exclusive lock is not waited for: the
 * statement fails `busy` instead (migration 41, busy-orgs.ts).
 */
export async function lockCatalogShared(q: Queryable, orgIds: string[]): Promise<void> {
  const sorted = [...new Set(orgIds)].sort();
  for (const id of sorted) await q.query(`SELECT headwater_org_lock_shared(${KEY}, $1)`, [id]);
}
