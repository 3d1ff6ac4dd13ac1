// Test harness: starts a real headwater service in this test process (embedded stores unless
// DATABASE_URL / NATS_URL / CLICKHOUSE_URL are set), or reuses a running one when
// HEADWATER_TEST_URL (+ HEADWATER_OPERATOR_TOKEN) is set. Every test isolates itself by creating
// its own org with a random name.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface TestServer {
  url: string;
  operatorToken: string;
  dataDir?: string;
  close(): Promise<void>;
}

export interface Res<T = any> { status: number; body: T; text: string; headers: Headers }

export async function startServer(extraArgs: string[] = [], env: Record<string, string | undefined> = {}): Promise<TestServer> {
  if (process.env.HEADWATER_TEST_URL && extraArgs.length === 0 && Object.keys(env).length === 0) {
    const token = process.env.HEADWATER_OPERATOR_TOKEN;
    if (!token) throw new Error('HEADWATER_TEST_URL needs HEADWATER_OPERATOR_TOKEN');
    return { url: process.env.HEADWATER_TEST_URL.replace(/\/$/, ''), operatorToken: token, close: async () => {} };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'hw-test-'));
  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const { loadConfig } = await import('../../api/config.js');
  const { createLogger } = await import('../../api/log.js');
  const { startService } = await import('../../api/service.js');
  const config = loadConfig(['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--operator-token', operatorToken, ...extraArgs],
    { ...process.env, HEADWATER_LOG_LEVEL: process.env.HEADWATER_LOG_LEVEL ?? 'warn', ...env });
  const svc = await startService(config, createLogger(config.logLevel));
  return {
    url: svc.url, operatorToken, dataDir,
    async close() { await svc.close(); rmSync(dataDir, { recursive: true, force: true }); },
  };
}

export interface CallOpts { token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; contentType?: string }

export async function call<T = any>(base: string, method: string, path: string, o: CallOpts = {}): Promise<Res<T>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  let body: string | Buffer | undefined;
  if (o.raw !== undefined) { body = o.raw; if (o.contentType) headers['content-type'] = o.contentType; }
  else if (o.body !== undefined) { body = JSON.stringify(o.body); headers['content-type'] = o.contentType ?? 'application/json'; }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: any = undefined;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

export interface OrgCreds {
  org: { id: string; name: string; createdAt: string };
  apiKey: string; deployKey: string; pipelineKey: string;
  sessions: { admin: string; member: string };
}

export const randomName = (p = 'org') => `${p}-${randomBytes(6).toString('hex')}`;

export async function createOrg(s: TestServer, name = randomName()): Promise<OrgCreds> {
  const r = await call(s.url, 'POST', '/v1/orgs', { token: s.operatorToken, body: { data: { name } } });
  if (r.status !== 201) throw new Error(`org create failed: ${r.status} ${r.text}`);
  return r.body.data;
}
