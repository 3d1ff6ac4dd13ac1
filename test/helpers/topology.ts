// Deployments a test (or a bench loop) can start and stop: the service in this process
// (startServer), `headwater serve` as a child process, or `serve` plus `headwater worker` child
// processes sharing a stream prefix, DATABASE_URL and NATS_URL (the layout of issue 21).
// The JetStream streams of a topology's own prefix are deleted when it closes.
import { spawn, type ChildProcess } from 'node:child_process';
import { EMBEDDED_ENV } from './modes.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import { BIN, NODE_ARGS } from './serve.js';
import { seedEmbedded, startServer } from './server.js';
import { deleteStreams, streamsLeft } from './streams.js';

export type TopologyKind = 'in-process' | 'serve' | 'serve+worker';

export interface TopologyOptions {
  kind: TopologyKind;
  /** Postgres + NATS (true) or the embedded stores and the in-process stream (false). */
  servers: boolean;
  databaseUrl?: string;
  natsUrl?: string;
  /** Piscina threads per process (HEADWATER_WORKERS); default 1 for child processes. */
  threads?: number;
  /** Extra environment of the child processes. */
  env?: Record<string, string>;
}

export interface Topology {
  kind: TopologyKind;
  servers: boolean;
  url: string;
  operatorToken: string;
  /** The stream prefix (servers only). */
  prefix?: string;
  procs: ChildProc[];
  /** Messages left in the ingest and event streams (servers only). */
  streamsLeft(): Promise<{ ingest: number; events: number } | undefined>;
  close(): Promise<void>;
}

export interface ChildProc { name: string; child: ChildProcess; out: string; err: string; exited: boolean }

/** True when something accepts TCP connections at the first server of a NATS URL (2 s at most). */
export function natsAnswers(url: string): Promise<boolean> {
  let host = '127.0.0.1';
  let port = 4222;
  try {
    const first = url.split(',')[0]!.trim();
    const u = new URL(first.includes('://') ? first : `nats://${first}`);
    host = u.hostname || host;
    port = u.port ? Number(u.port) : port;
  } catch { return Promise.resolve(false); }
  return new Promise((resolve) => {
    const sock = createConnection({ host, port });
    const done = (ok: boolean) => { clearTimeout(timer); sock.destroy(); resolve(ok); };
    const timer = setTimeout(() => done(false), 2_000);
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/** DATABASE_URL and NATS_URL of the environment, when both are set and NATS answers. */
export async function serversFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<{ databaseUrl: string; natsUrl: string } | undefined> {
  const databaseUrl = env.DATABASE_URL;
  const natsUrl = env.NATS_URL;
  if (!databaseUrl || !natsUrl || !(await natsAnswers(natsUrl))) return undefined;
  return { databaseUrl, natsUrl };
}

/** Spawns `node bin/headwater.js <args>` and resolves once stdout matches `ready` (`readyMs` at most). */
export function startProc(name: string, args: string[], env: Record<string, string>, ready: RegExp, readyMs = 60_000): Promise<{ proc: ChildProc; match: RegExpExecArray }> {
  const child = spawn(process.execPath, [...NODE_ARGS, BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc: ChildProc = { name, child, out: '', err: '', exited: false };
  child.on('exit', () => { proc.exited = true; });
  return new Promise((resolve, reject) => {
    let ok = false;
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${name}: not ready in ${readyMs / 1000} s\n${proc.out}\n${proc.err.slice(-4000)}`)); }, readyMs);
    child.stdout!.on('data', (b) => {
      proc.out += b;
      if (proc.out.length > 200_000) proc.out = proc.out.slice(-100_000);
      const m = ok ? null : ready.exec(proc.out);
      if (m) { ok = true; clearTimeout(timer); resolve({ proc, match: m }); }
    });
    child.stderr!.on('data', (b) => { proc.err += b; if (proc.err.length > 200_000) proc.err = proc.err.slice(-100_000); });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      if (!ok) reject(new Error(`${name} exited (${code ?? sig}) before it was ready\n${proc.err.slice(-4000)}`));
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export function stopProc(p: ChildProc, graceMs = 8_000): Promise<void> {
  if (p.exited || p.child.exitCode !== null || p.child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
    const hard = setTimeout(resolve, graceMs + 3_000); // never hang a teardown
    p.child.once('exit', () => { clearTimeout(kill); clearTimeout(hard); resolve(); });
    p.child.kill('SIGTERM');
  });
}

/** Starts a topology; `close()` stops its processes, removes its directories and deletes its streams. */
export async function startTopology(o: TopologyOptions): Promise<Topology> {
  const servers = o.servers;
  const databaseUrl = o.databaseUrl ?? process.env.DATABASE_URL;
  const natsUrl = o.natsUrl ?? process.env.NATS_URL;
  if (servers && (!databaseUrl || !natsUrl)) throw new Error('a topology on servers needs DATABASE_URL and NATS_URL');
  if (o.kind === 'serve+worker' && !servers) throw new Error('serve + worker needs DATABASE_URL and NATS_URL');
  const prefix = servers ? `st${randomBytes(5).toString('hex')}` : undefined;
  const storeEnv: Record<string, string> = servers
    ? { DATABASE_URL: databaseUrl!, NATS_URL: natsUrl!, HEADWATER_STREAM_PREFIX: prefix!, CLICKHOUSE_URL: '' }
    : { ...EMBEDDED_ENV };
  const left = async () => (servers ? streamsLeft(natsUrl!, prefix!) : undefined);

  if (o.kind === 'in-process') {
    const s = await startServer([], { ...storeEnv, ...(o.threads ? { HEADWATER_WORKERS: String(o.threads) } : {}), ...o.env });
    return {
      kind: o.kind, servers, url: s.url, operatorToken: s.operatorToken, prefix, procs: [], streamsLeft: left,
      async close() { await s.close(); if (servers) await deleteStreams(natsUrl!, prefix!); },
    };
  }

  const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
  const env: Record<string, string> = {
    ...storeEnv,
    HEADWATER_SECRET_KEY: randomBytes(32).toString('hex'),
    HEADWATER_OPERATOR_TOKEN: operatorToken,
    HEADWATER_WORKERS: String(o.threads ?? 1),
    HEADWATER_LOG_LEVEL: process.env.HEADWATER_LOG_LEVEL ?? 'warn',
    ...o.env,
  };
  const dirs: string[] = [];
  const procs: ChildProc[] = [];
  const tmp = (p: string) => { const d = mkdtempSync(join(tmpdir(), p)); dirs.push(d); return d; };
  const close = async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    if (servers) await deleteStreams(natsUrl!, prefix!);
  };
  try {
    if (o.kind === 'serve+worker') {
      // The worker first (it creates the streams too), then the serve process.
      const w = await startProc('worker', ['worker', '--data-dir', tmp('hw-topo-worker-')], env, /headwater worker running/);
      procs.push(w.proc);
    }
    const dataDir = tmp('hw-topo-serve-');
    if (!servers) await seedEmbedded(dataDir);
    const s = await startProc('serve', ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], env, /listening on (http:\/\/\S+)/, 120_000);
    procs.push(s.proc);
    return { kind: o.kind, servers, url: s.match[1]!, operatorToken, prefix, procs, streamsLeft: left, close };
  } catch (err) {
    await close();
    throw err;
  }
}
