// An org's change, as the tests hold it: the statement that takes the org's segment lock (a segment
// create, update or delete) or its catalog lock (a promote or deny) exclusively, in a transaction
// of the test's own.
import { segmentLockKey } from '../../pipeline/segments/mod.js';
import { catalogLockKeySql } from '../../pipeline/governance/mod.js';

export interface OrgLock { sql: string; arg: (orgId: string) => string }

export const SEGMENT_LOCK: OrgLock = { sql: 'SELECT pg_advisory_xact_lock($1::bigint)', arg: (orgId) => segmentLockKey(orgId) };
export const CATALOG_LOCK: OrgLock = { sql: `SELECT pg_advisory_xact_lock(${catalogLockKeySql('$1')})`, arg: (orgId) => orgId };
