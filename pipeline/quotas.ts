// Per-org quotas on what an org stores or runs (issue 23): stored artifact bytes, journeys,
// webhooks, segments and running executions. A write that would pass a quota takes the org's
// advisory lock for that quota, reads the limit fresh from `orgs.limits` and counts with one indexed
// query inside the same transaction, so two concurrent creates at the limit cannot both pass and an
// operator change applies to the next write. The lock is per (org, quota): other orgs never wait.
import type pg from 'pg';
import { advisoryKey } from './store/postgres.js';

export const QUOTA_NAMES = ['artifactBytes', 'journeys', 'webhooks', 'segments', 'runningExecutions'] as const;
export type QuotaName = typeof QUOTA_NAMES[number];

/** Generous enough that no ordinary project meets them; the operator sets each per org (null: unlimited). */
export const QUOTA_DEFAULTS: Record<QuotaName, number | null> = {
  artifactBytes: 1024 ** 3, journeys: 1000, webhooks: 100, segments: 1000, runningExecutions: 100_000,
};

const WHAT: Record<QuotaName, string> = {
  artifactBytes: 'bytes of stored artifacts', journeys: 'journeys', webhooks: 'webhooks', segments: 'segments',
  runningExecutions: 'running or waiting executions',
};

/** Thrown when a write would pass a quota; the API answers it with 429 over_quota. */
export class OverQuotaError extends Error {
  constructor(readonly quota: QuotaName, readonly limit: number, detail = '') {
    super(`over the org's ${quota} limit: at most ${limit} ${WHAT[quota]}${detail ? ` (${detail})` : ''}; the operator can raise it with PATCH /v1/orgs/{orgId}`);
  }
}

/** The org's limit for `name` (null: unlimited) from a stored `limits` object. */
export function quotaOf(limits: Record<string, unknown> | null | undefined, name: QuotaName): number | null {
  const v = limits?.[name];
  return v === undefined ? QUOTA_DEFAULTS[name] : (v as number | null);
}

/**
 * Takes the org's lock for `name` until the transaction ends and returns the current limit. Call it
 * before counting, inside the transaction that writes.
 */
export async function lockQuota(c: pg.PoolClient, orgId: string, name: QuotaName): Promise<number | null> {
  await c.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(`quota\u0000${name}\u0000${orgId}`)]);
  const r = await c.query<{ limits: Record<string, unknown> | null }>('SELECT limits FROM orgs WHERE id = $1', [orgId]);
  return quotaOf(r.rows[0]?.limits, name);
}

/** Throws OverQuotaError unless `used + adding` stays within `limit`. */
export function checkQuota(name: QuotaName, limit: number | null, used: number, adding: number): void {
  if (limit !== null && used + adding > limit) throw new OverQuotaError(name, limit, `${used} in use, ${adding} more asked`);
}
