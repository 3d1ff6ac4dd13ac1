// Child processes the benches start: `headwater serve` as a user runs it, and small helper
// programs (receivers) that print one JSON line once they listen. Both are measured from outside,
// so their CPU is not the bench's own.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { deleteStreams, streamNames } from '../pipeline/stream/mod.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Served { url: string; token: string; pid: number; close(): Promise<void> }

/**
 * A database of its own on the Postgres server `url` names, dropped by `drop()`: a bench run starts
 * from an empty store and leaves nothing behind in the database it was given.
 */
export async function benchDatabase(url: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `headwater_bench_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try { await c.query(sql); } finally { await c.end(); }
  };
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return { name, url: u.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Deletes the server's streams (its own prefix) from the NATS server at `url`. */
async function deleteOwnStreams(url: string, prefix: string): Promise<void> {
  const nc = await connect({ servers: url });
  try { await deleteStreams(await jetstreamManager(nc), streamNames(prefix)); } finally { await nc.close(); }
}

/**
 * `headwater serve` on a fresh data directory and port (and, when DATABASE_URL is set, a fresh
 * database; with NATS_URL, streams of its own, deleted on close); resolves once it logged its URL.
 */
export async function spawnServe(o: { nodeArgs?: string[]; env?: Record<string, string> } = {}): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hw-bench-'));
  const token = `hwo_${randomBytes(24).toString('base64url')}`;
  const db = process.env.DATABASE_URL ? await benchDatabase(process.env.DATABASE_URL) : undefined;
  const prefix = `b${randomBytes(4).toString('hex')}`;
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), join(ROOT, 'bin', 'headwater.js'), 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--operator-token', token],
    { cwd: ROOT, env: { ...process.env, ...(db ? { DATABASE_URL: db.url } : {}), HEADWATER_LOG_LEVEL: 'info', HEADWATER_STREAM_PREFIX: prefix, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  // The output's tail: shown when the server exits before it is closed (a crash mid-bench).
  let buf = '';
  let closing = false;
  const keep = (c: Buffer) => { buf = (buf + c).slice(-8000); };
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (c) => { keep(c); const m = /"url":"(http:\/\/[^"]+)"/.exec(buf); if (m) resolve(m[1]!); });
    child.stderr!.on('data', keep);
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${buf.slice(-2000)}`)));
  }).catch(async (err) => { await db?.drop().catch(() => {}); throw err; });
  child.once('exit', (code, signal) => { if (!closing) console.error(`bench: the server exited (${code ?? signal}) before it was closed; its last output:\n${buf.slice(-4000)}`); });
  return {
    url, token, pid: child.pid!,
    async close() {
      closing = true;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
      await db?.drop();
      // Only streams of its own: a prefix the caller named is the caller's.
      if (process.env.NATS_URL && o.env?.HEADWATER_STREAM_PREFIX === undefined) await deleteOwnStreams(process.env.NATS_URL, prefix);
    },
  };
}

/** Runs ES module `source` in a child; resolves with the first line it prints, parsed as JSON. */
export async function spawnModule<T>(source: string, what: string): Promise<{ info: T; stop(): void }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', 'pipe', 'inherit'] });
  const info = await new Promise<T>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => { out += c; const nl = out.indexOf('\n'); if (nl !== -1) resolve(JSON.parse(out.slice(0, nl)) as T); });
    child.on('exit', (code) => reject(new Error(`${what} exited (${code})`)));
  });
  return { info, stop: () => child.kill('SIGKILL') };
}
