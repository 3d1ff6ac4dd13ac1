// Versioned, forward-only migrations. Postgres and ClickHouse both run under one Postgres advisory
// lock, so processes starting at once apply each step exactly once.
import type pg from 'pg';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../lib/log.js';

import type { Migration } from './migrations/types.js';
import { pg001 } from './migrations/pg-001-orgs-apps-sources.js';
import { pg002 } from './migrations/pg-002-profiles.js';
import { pg003 } from './migrations/pg-003-catalog.js';
import { pg004 } from './migrations/pg-004-usage.js';
import { pg005 } from './migrations/pg-005-segments.js';
import { pg006 } from './migrations/pg-006-landing.js';
import { pg007 } from './migrations/pg-007-bulk-functions.js';
import { pg008 } from './migrations/pg-008-fast-track.js';
import { pg009 } from './migrations/pg-009-fast-track-shared.js';
import { pg010 } from './migrations/pg-010-dead-letters.js';
import { pg011 } from './migrations/pg-011-fast-track-history.js';
import { pg012 } from './migrations/pg-012-webhooks.js';
import { pg013 } from './migrations/pg-013-journeys.js';
import { pg014 } from './migrations/pg-014-write-keys.js';
import { pg015 } from './migrations/pg-015-executions.js';
import { pg016 } from './migrations/pg-016-emails.js';
import { pg017 } from './migrations/pg-017-drop-counts.js';
import { pg018 } from './migrations/pg-018-webhook-url-password.js';
import { pg019 } from './migrations/pg-019-fair-claims.js';
import { pg020 } from './migrations/pg-020-credential-rotation.js';
import { pg021 } from './migrations/pg-021-privacy.js';
import { pg022 } from './migrations/pg-022-dashboard-stats.js';
import { pg023 } from './migrations/pg-023-journey-controls.js';
import { pg024 } from './migrations/pg-024-messages-profile.js';
import { pg025 } from './migrations/pg-025-journey-metrics.js';
import { pg026 } from './migrations/pg-026-fast-track-new-profiles.js';
import { pg027 } from './migrations/pg-027-fast-identify.js';
import { pg028 } from './migrations/pg-028-save-outcomes.js';
import { pg029 } from './migrations/pg-029-claim-due.js';
import { pg030 } from './migrations/pg-030-drop-profiles-org-app.js';
import { pg031 } from './migrations/pg-031-claim-plans.js';
import { pg032 } from './migrations/pg-032-write-plans-no-scans.js';
import { pg033 } from './migrations/pg-033-history-for-named-events.js';
import { pg034 } from './migrations/pg-034-no-stored-probe-for-new-profiles.js';
import { pg035 } from './migrations/pg-035-retry-helper.js';
import { pg036 } from './migrations/pg-036-plain-identifier-insert.js';
import { pg037 } from './migrations/pg-037-fast-track-json-answer.js';
import { pg038 } from './migrations/pg-038-history-day-counts.js';
import { pg039 } from './migrations/pg-039-history-counts-early-exit.js';
import { pg040 } from './migrations/pg-040-fast-track-attach-first.js';
import { pg041 } from './migrations/pg-041-busy-org-hand-back.js';

export type { Migration };

// One file per step under ./migrations/; the list below is the order. Versions are never reused.
export const PG_MIGRATIONS: Migration[] = [pg001, pg002, pg003, pg004, pg005, pg006, pg007, pg008, pg009, pg010, pg011, pg012, pg013, pg014, pg015, pg016, pg017, pg018, pg019, pg020, pg021, pg022, pg023, pg024, pg025, pg026, pg027, pg028, pg029, pg030, pg031, pg032, pg033, pg034, pg035, pg036, pg037, pg038, pg039, pg040, pg041];

export const CH_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'events',
    statements: [
      // ReplacingMergeTree on the event id: a redelivered insert of the same event collapses.
      `CREATE TABLE IF NOT EXISTS events (
        org_id String,
        app_id String,
        source_id String,
        profile_id String,
        id String,
        environment LowCardinality(String),
        event String,
        properties String,
        timestamp DateTime64(3, 'UTC'),
        received_at DateTime64(3, 'UTC'),
        message_id Nullable(String)
      ) ENGINE = ReplacingMergeTree
      ORDER BY (org_id, app_id, id)`,
    ],
  },
  {
    // The call's `context` (JSON; '' when it had none), kept beside the properties and outside the
    // tracking plan.
    version: 2,
    name: 'event context',
    statements: [`ALTER TABLE events ADD COLUMN IF NOT EXISTS context String DEFAULT ''`],
  },
];

const LOCK_KEY = 7_243_001;

export async function migrate(pool: pg.Pool, ch: ClickHouseClient, log: Logger): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await c.query(`CREATE TABLE IF NOT EXISTS headwater_migrations (
      store text NOT NULL, version int NOT NULL, name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (store, version))`);
    const done = new Set((await c.query(`SELECT store || ':' || version AS k FROM headwater_migrations`)).rows.map((r) => r.k as string));
    for (const m of PG_MIGRATIONS) {
      if (done.has(`postgres:${m.version}`)) continue;
      await c.query('BEGIN');
      try {
        for (const s of m.statements) await c.query(s);
        await c.query(`INSERT INTO headwater_migrations (store, version, name) VALUES ('postgres', $1, $2)`, [m.version, m.name]);
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK');
        throw err;
      }
      log.info('migration applied', { store: 'postgres', version: m.version, name: m.name });
    }
    // ClickHouse has no transactions: its statements are idempotent (IF NOT EXISTS) and a step is
    // recorded as applied only after all of them succeeded. Each ClickHouse store records its own
    // steps, since an embedded chDB is per process while Postgres may be shared.
    await ch.command({ query: `CREATE TABLE IF NOT EXISTS headwater_migrations (version UInt32, name String, applied_at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY version` });
    const rs = await ch.query({ query: 'SELECT version FROM headwater_migrations', format: 'JSONEachRow' });
    const chDone = new Set(((await rs.json()) as Array<{ version: number }>).map((r) => Number(r.version)));
    for (const m of CH_MIGRATIONS) {
      if (chDone.has(m.version)) continue;
      for (const s of m.statements) await ch.command({ query: s });
      await ch.insert({ table: 'headwater_migrations', values: [{ version: m.version, name: m.name }], format: 'JSONEachRow' });
      log.info('migration applied', { store: 'clickhouse', version: m.version, name: m.name });
    }
  } finally {
    await c.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    c.release();
  }
}
