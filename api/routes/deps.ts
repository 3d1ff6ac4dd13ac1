import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Config } from '../config.js';
import type { Logger } from '../../lib/log.js';
import type { Auth } from '../auth/auth.js';
import type { Secrets } from '../../pipeline/secrets.js';
import type { FrontEndName } from '../../http/front-end.js';
import type { CallResult, IngestCall } from '../../pipeline/types.js';

/** What route modules receive: clients are passed in, never imported as singletons. */
export interface Deps {
  pool: pg.Pool;
  ch: ClickHouseClient;
  auth: Auth;
  secrets: Secrets;
  config: Config;
  log: Logger;
  /** Named readiness checks of the configured dependencies. */
  checks: Record<string, () => Promise<boolean>>;
  /** Receive times this process has not flushed to Postgres yet (ingest/activity.ts). */
  recent?: RecentActivity;
  /** The HTTP front end serving (reported by /health/ready). */
  frontEnd: FrontEndName;
  /** The ingestion pipeline, for replaying promoted (held) calls; absent -> promote is 503. */
  ingest?: { replay(calls: IngestCall[]): Promise<CallResult[]> };
}

export interface RecentActivity { source(id: string): number | undefined; app(id: string): number | undefined }

/** The later of a stored time and an unflushed one. */
export function latest(stored: Date | string | null, unflushed: number | undefined): Date | string | null {
  if (unflushed === undefined) return stored;
  if (stored === null) return new Date(unflushed);
  return new Date(stored).getTime() >= unflushed ? stored : new Date(unflushed);
}

export { createBinder, type Bind, type Handler } from '../../http/bind.js';
