// A service run in the bench script's own process (embedded, or the servers DATABASE_URL /
// NATS_URL name), with an org to load: the setup of bench/privacy.ts and bench/journey-controls.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig } from '../api/config.js';
import { createLogger } from '../lib/log.js';
import { startService } from '../api/service.js';

export interface InProcess {
  url: string;
  /** The operator token. */
  token: string;
  /** One connection to the service's Postgres. Literal SQL only (the simple protocol): embedded
   * Postgres is one session shared with the service. */
  pool: pg.Pool;
  close(): Promise<void>;
}

/** `name` tags the data directory (`hw-bench-<name>-`). */
export async function startInProcess(name: string): Promise<InProcess> {
  const dir = mkdtempSync(join(tmpdir(), `hw-bench-${name}-`));
  const token = `hwo_${randomBytes(24).toString('base64url')}`;
  const config = loadConfig(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--operator-token', token],
    { ...process.env, HEADWATER_LOG_LEVEL: 'warn', HEADWATER_STREAM_PREFIX: `b${randomBytes(4).toString('hex')}` });
  const svc = await startService(config, createLogger('warn'));
  const pool = config.databaseUrl ? new pg.Pool({ connectionString: config.databaseUrl, max: 1 })
    : new pg.Pool({ host: join(dir, 'run'), port: 5432, user: 'postgres', database: 'postgres', max: 1 });
  return {
    url: svc.url, token, pool,
    async close() {
      await pool.end();
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface BenchOrg { orgId: string; admin: string; apiKey: string; appId: string; sourceId: string }

/** A new org with one app: its admin session, API key and the app's default source. */
export async function benchOrg(s: Pick<InProcess, 'url' | 'token'>): Promise<BenchOrg> {
  const call = async (method: string, path: string, tok: string, body?: unknown) => {
    const r = await fetch(s.url + path, { method, headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return JSON.parse(text).data;
  };
  const org = await call('POST', '/v1/orgs', s.token, { data: { name: `bench-${randomBytes(3).toString('hex')}` } });
  const app = await call('POST', '/v1/apps', org.sessions.admin, { data: { name: 'a' } });
  const src = (await call('GET', `/v1/apps/${app.id}/sources`, org.sessions.admin))[0];
  return { orgId: org.org.id, admin: org.sessions.admin, apiKey: org.apiKey, appId: app.id, sourceId: src.id };
}
