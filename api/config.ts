// Every setting of `headwater serve`: a flag, its environment variable and its default (docs/operations.md).
import { resolve } from 'node:path';
import { FRONT_END_MODES, type FrontEndMode } from '../http/front-end.js';
import { TrustedProxies } from '../http/proxies.js';
import type { SenderOptions } from '../journeys/webhooks/mod.js';
import type { EmailSenderOptions } from '../journeys/email/mod.js';
import { ConfigError } from '../lib/config-error.js';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  operatorToken?: string;
  secretKey?: string;
  databaseUrl?: string;
  natsUrl?: string;
  clickhouseUrl?: string;
  streamPrefix?: string;
  workers: number;
  embeddedCacheMb: number;
  embeddedIdleTxMs: number;
  compileThreads: number;
  bodyLimit: number;
  artifactLimit: number;
  webhookAllowPrivate: boolean;
  webhookAttempts: number;
  webhookBackoffMs: number;
  webhookDisableAfter: number;
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  webhookConcurrencyPerWebhook: number;
  webhookConcurrencyPerOrg: number;
  webhookPollMs: number;
  erasureLeaseMs: number;
  erasurePauseMs: number;
  retentionSweepMs: number;
  smtpUrl?: string;
  emailFrom: string;
  emailAttempts: number;
  emailRetryBaseMs: number;
  emailPollMs: number;
  journeyThreads: number;
  journeyFuel: number;
  journeyTimeoutMs: number;
  journeyMemoryMb: number;
  journeyLeaseMs: number;
  journeyPollMs: number;
  journeyMaxRestarts: number;
  journeyRestartsPerMinute: number;
  jwtIssuer?: string;
  jwksUrl?: string;
  jwtOrgClaim: string;
  jwtRoleClaim: string;
  jwtAudience?: string;
  sessionTtlSeconds: number;
  authFailureLimit: number;
  trustedProxies?: string;
  publicUrl?: string;
  segmentSweepMs: number;
  segmentPreviewCap: number;
  /** Unset: 1,000 ms with NATS, 250 ms embedded (api/node.ts). */
  eventLingerMs?: number;
  ingestMaxWaitMs: number;
  /** How long a graceful stop (SIGTERM, SIGINT) may take before the process exits anyway (cli/main.ts). */
  shutdownSeconds: number;
  metricsPort?: number;
  frontEnd: FrontEndMode;
  segmentCorsOrigins: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

interface Opt { key: keyof Config; flag: string; env: string; def: string | undefined; kind: 'string' | 'int' | 'bool'; help: string }

export const OPTIONS: Opt[] = [
  { key: 'port', flag: '--port', env: 'PORT', def: '8080', kind: 'int', help: 'HTTP port (0 picks a free one)' },
  { key: 'host', flag: '--host', env: 'HOST', def: '0.0.0.0', kind: 'string', help: 'address to listen on' },
  { key: 'dataDir', flag: '--data-dir', env: 'HEADWATER_DATA_DIR', def: './.headwater', kind: 'string', help: 'embedded stores, generated secrets and the operator token live here' },
  { key: 'operatorToken', flag: '--operator-token', env: 'HEADWATER_OPERATOR_TOKEN', def: undefined, kind: 'string', help: 'operator bearer token, any value of 16+ characters; generated into the data dir and printed once when unset' },
  { key: 'secretKey', flag: '--secret-key', env: 'HEADWATER_SECRET_KEY', def: undefined, kind: 'string', help: 'master key for session signing and secrets at rest; generated into the data dir when unset (set it when several processes share a database)' },
  { key: 'databaseUrl', flag: '--database-url', env: 'DATABASE_URL', def: undefined, kind: 'string', help: 'PostgreSQL URL; embedded PGlite when unset' },
  { key: 'natsUrl', flag: '--nats-url', env: 'NATS_URL', def: undefined, kind: 'string', help: 'NATS JetStream URL; in-process stream when unset' },
  { key: 'clickhouseUrl', flag: '--clickhouse-url', env: 'CLICKHOUSE_URL', def: undefined, kind: 'string', help: 'ClickHouse HTTP URL; embedded chDB when unset' },
  { key: 'streamPrefix', flag: '--stream-prefix', env: 'HEADWATER_STREAM_PREFIX', def: undefined, kind: 'string', help: 'prefix of the JetStream stream, consumer and subject names, so several deployments can share one NATS server' },
  { key: 'workers', flag: '--workers', env: 'HEADWATER_WORKERS', def: '2', kind: 'int', help: 'Piscina worker threads' },
  { key: 'embeddedCacheMb', flag: '--embedded-cache-mb', env: 'HEADWATER_EMBEDDED_CACHE_MB', def: '128', kind: 'int', help: 'page cache of embedded PostgreSQL (PGlite shared_buffers), MiB, 16 to 4096; unused with DATABASE_URL. Ingestion slows as the hot index pages of a growing store outgrow it; a larger cache keeps it steady longer and adds as much to the process\'s memory' },
  { key: 'embeddedIdleTxMs', flag: '--embedded-idle-tx-ms', env: 'HEADWATER_EMBEDDED_IDLE_TX_MS', def: '5000', kind: 'int', help: 'how long a client of the embedded store\'s socket (psql) may leave a transaction idle while the service waits for the store, milliseconds; then it is rolled back and the connection closed (0: never). Unused with DATABASE_URL' },
  { key: 'compileThreads', flag: '--compile-threads', env: 'HEADWATER_COMPILE_THREADS', def: '1', kind: 'int', help: 'threads compiling pushed journey and template bundles (a pool of its own, started on demand)' },
  { key: 'bodyLimit', flag: '--body-limit', env: 'HEADWATER_BODY_LIMIT', def: String(1024 * 1024), kind: 'int', help: 'request body limit in bytes (413 payload_too_large)' },
  { key: 'artifactLimit', flag: '--artifact-limit', env: 'HEADWATER_ARTIFACT_LIMIT', def: String(32 * 1024 * 1024), kind: 'int', help: 'artifact upload limit in bytes (413 artifact_too_large)' },
  { key: 'webhookAllowPrivate', flag: '--webhook-allow-private', env: 'HEADWATER_WEBHOOK_ALLOW_PRIVATE', def: 'false', kind: 'bool', help: 'let outbound webhooks reach loopback, private, link-local and other non-public addresses (development and tests)' },
  { key: 'webhookAttempts', flag: '--webhook-attempts', env: 'HEADWATER_WEBHOOK_ATTEMPTS', def: '5', kind: 'int', help: 'attempts per outbound webhook delivery, the first included (at least 1)' },
  { key: 'webhookBackoffMs', flag: '--webhook-backoff-ms', env: 'HEADWATER_WEBHOOK_BACKOFF_MS', def: '30000', kind: 'int', help: 'wait before the second attempt, milliseconds; each later wait is 4 times longer (+-20 % jitter, at most a day); a 429/503 Retry-After is honoured' },
  { key: 'webhookDisableAfter', flag: '--webhook-disable-after', env: 'HEADWATER_WEBHOOK_DISABLE_AFTER', def: '5', kind: 'int', help: 'consecutive failed deliveries after which a webhook disables itself (at least 1)' },
  { key: 'webhookTimeoutMs', flag: '--webhook-timeout-ms', env: 'HEADWATER_WEBHOOK_TIMEOUT_MS', def: '15000', kind: 'int', help: 'deadline of one delivery attempt (resolve, connect, answer), milliseconds' },
  { key: 'webhookConcurrency', flag: '--webhook-concurrency', env: 'HEADWATER_WEBHOOK_CONCURRENCY', def: '64', kind: 'int', help: 'outbound webhook requests in flight per process' },
  { key: 'webhookConcurrencyPerWebhook', flag: '--webhook-concurrency-per-webhook', env: 'HEADWATER_WEBHOOK_CONCURRENCY_PER_WEBHOOK', def: '8', kind: 'int', help: 'requests in flight per webhook per process, so a slow receiver holds only its own slots' },
  { key: 'webhookConcurrencyPerOrg', flag: '--webhook-concurrency-per-org', env: 'HEADWATER_WEBHOOK_CONCURRENCY_PER_ORG', def: '32', kind: 'int', help: 'requests in flight per org per process (at most the concurrency), so one org\'s slow receivers leave the other slots to other orgs; due deliveries are taken round-robin across orgs' },
  { key: 'webhookPollMs', flag: '--webhook-poll-ms', env: 'HEADWATER_WEBHOOK_POLL_MS', def: '1000', kind: 'int', help: 'how often the delivery outbox is polled while this process cannot be told of work other processes enqueued (its LISTEN connection to PostgreSQL is down), and the pause after a failed pass, milliseconds; otherwise the sender wakes on work and at the earliest retry or lease end' },
  { key: 'smtpUrl', flag: '--smtp-url', env: 'SMTP_URL', def: undefined, kind: 'string', help: 'SMTP transport for journey e-mail (smtp://user:pass@host:587, smtps://...); when unset e-mails are kept in the local outbox (status stored), never sent' },
  { key: 'emailFrom', flag: '--email-from', env: 'HEADWATER_EMAIL_FROM', def: 'headwater@localhost', kind: 'string', help: 'From address of journey e-mail (also the domain of its Message-ID)' },
  { key: 'emailAttempts', flag: '--email-attempts', env: 'HEADWATER_EMAIL_ATTEMPTS', def: '5', kind: 'int', help: 'attempts per e-mail, the first included (at least 1); an SMTP 5xx answer fails it at once' },
  { key: 'emailRetryBaseMs', flag: '--email-retry-base-ms', env: 'HEADWATER_EMAIL_RETRY_BASE_MS', def: '30000', kind: 'int', help: 'wait before the second e-mail attempt, milliseconds; each later wait is 4 times longer (+-20 % jitter, at most a day)' },
  { key: 'emailPollMs', flag: '--email-poll-ms', env: 'HEADWATER_EMAIL_POLL_MS', def: '1000', kind: 'int', help: 'how often the e-mail outbox is polled while this process cannot be told of work other processes enqueued (its LISTEN connection to PostgreSQL is down), and the pause after a failed pass, milliseconds; otherwise the sender wakes on work and at the earliest retry or lease end' },
  { key: 'journeyThreads', flag: '--journey-threads', env: 'HEADWATER_JOURNEY_THREADS', def: '2', kind: 'int', help: 'threads running journey code and e-mail templates in QuickJS (a pool of its own, started with the first activation)' },
  { key: 'journeyFuel', flag: '--journey-fuel', env: 'HEADWATER_JOURNEY_FUEL', def: '1000', kind: 'int', help: 'instruction budget of one journey activation, in interrupt-handler calls (about 10,000 function calls or loop iterations each); journey_fuel_exceeded past it' },
  { key: 'journeyTimeoutMs', flag: '--journey-timeout-ms', env: 'HEADWATER_JOURNEY_TIMEOUT_MS', def: '30000', kind: 'int', help: 'wall-clock budget of one journey activation, host calls included, milliseconds; journey_timeout past it' },
  { key: 'journeyMemoryMb', flag: '--journey-memory-mb', env: 'HEADWATER_JOURNEY_MEMORY_MB', def: '32', kind: 'int', help: 'memory cap of one journey sandbox, MiB; journey_memory_exceeded past it' },
  { key: 'journeyLeaseMs', flag: '--journey-lease-ms', env: 'HEADWATER_JOURNEY_LEASE_MS', def: '60000', kind: 'int', help: 'how long a process holds an execution it activates; one left by a dead process is activated again after it (at least the timeout)' },
  { key: 'journeyPollMs', flag: '--journey-poll-ms', env: 'HEADWATER_JOURNEY_POLL_MS', def: '250', kind: 'int', help: 'how soon due executions that could not be claimed are looked at again; otherwise the runner wakes on work and at the earliest deadline, milliseconds' },
  { key: 'journeyMaxRestarts', flag: '--journey-max-restarts', env: 'HEADWATER_JOURNEY_MAX_RESTARTS', def: '10000', kind: 'int', help: 'ctx.restart() calls per execution; the next one fails it with journey_error (restarts are also spaced out: 10 ms doubling up to 1 s)' },
  { key: 'journeyRestartsPerMinute', flag: '--journey-restarts-per-minute', env: 'HEADWATER_JOURNEY_RESTARTS_PER_MINUTE', def: '30', kind: 'int', help: 'ctx.restart() calls per minute of an execution\'s run time (counted from its start, at least one minute); past it the execution fails with journey_error' },
  { key: 'jwtIssuer', flag: '--jwt-issuer', env: 'HEADWATER_JWT_ISSUER', def: undefined, kind: 'string', help: 'issuer (iss) of an external identity provider whose session JWTs are accepted' },
  { key: 'jwksUrl', flag: '--jwks-url', env: 'HEADWATER_JWKS_URL', def: undefined, kind: 'string', help: 'JWKS URL of that identity provider' },
  { key: 'jwtOrgClaim', flag: '--jwt-org-claim', env: 'HEADWATER_JWT_ORG_CLAIM', def: 'org_id', kind: 'string', help: 'claim holding the org id in external session tokens' },
  { key: 'jwtRoleClaim', flag: '--jwt-role-claim', env: 'HEADWATER_JWT_ROLE_CLAIM', def: 'org_role', kind: 'string', help: 'claim holding the role (org:admin | org:member) in external session tokens' },
  { key: 'jwtAudience', flag: '--jwt-audience', env: 'HEADWATER_JWT_AUDIENCE', def: undefined, kind: 'string', help: 'when set, external session tokens must carry this audience (aud); tokens without it or for another audience are refused (401). Set it to the audience your identity provider issues for headwater, so tokens it minted for other applications do not work here' },
  { key: 'authFailureLimit', flag: '--auth-failure-limit', env: 'HEADWATER_AUTH_FAILURE_LIMIT', def: '60', kind: 'int', help: 'failed authentications (unknown keys, invalid session tokens) a client address may have per minute, IPv6 counted per /64; past it, unknown keys are answered 429 rate_limited with Retry-After without a database lookup (cached valid keys and valid sessions still work); 0 turns the limit off' },
  { key: 'sessionTtlSeconds', flag: '--session-ttl', env: 'HEADWATER_SESSION_TTL', def: String(30 * 24 * 3600), kind: 'int', help: 'lifetime of built-in session tokens, seconds' },
  { key: 'segmentSweepMs', flag: '--segment-sweep-ms', env: 'HEADWATER_SEGMENT_SWEEP_MS', def: '60000', kind: 'int', help: 'how often segment withinDays windows are moved to now (exits and entries of profiles whose events aged out), milliseconds' },
  { key: 'erasureLeaseMs', flag: '--erasure-lease-ms', env: 'HEADWATER_ERASURE_LEASE_MS', def: '30000', kind: 'int', help: 'how long a process holds an erasure job without renewing it (renewed every third of it while its steps run); one left by a dead process is taken again after it' },
  { key: 'erasurePauseMs', flag: '--erasure-pause-ms', env: 'HEADWATER_ERASURE_PAUSE_MS', def: '0', kind: 'int', help: 'pause between the steps of an erasure, milliseconds (spreads its load on the stores; 0: back to back)' },
  { key: 'retentionSweepMs', flag: '--retention-sweep-ms', env: 'HEADWATER_RETENTION_SWEEP_MS', def: '3600000', kind: 'int', help: 'how often each org\'s retention windows are applied (deletes older events, executions, e-mails, webhook deliveries and Segment rejections), milliseconds' },
  { key: 'segmentPreviewCap', flag: '--segment-preview-cap', env: 'HEADWATER_SEGMENT_PREVIEW_CAP', def: '10000', kind: 'int', help: 'profiles a segment preview scans at most' },
  { key: 'eventLingerMs', flag: '--event-linger-ms', env: 'HEADWATER_EVENT_LINGER_MS', def: undefined, kind: 'int', help: 'how long the event writer waits to fill a ClickHouse insert (up to 5,000 events), milliseconds: fewer, larger inserts cost ClickHouse less merging, and events reach ClickHouse (and journey triggers) later; unset: 1000 with NATS, 250 embedded' },
  { key: 'ingestMaxWaitMs', flag: '--ingest-max-wait-ms', env: 'HEADWATER_INGEST_MAX_WAIT_MS', def: '1000', kind: 'int', help: 'when even the quickest write of the last interval of this length waited longer for the ingestion workers, and one is still waiting longer, new writes are answered 503 with Retry-After at once (shed load instead of answering slowly), milliseconds' },
  { key: 'shutdownSeconds', flag: '--shutdown-seconds', env: 'HEADWATER_SHUTDOWN_SECONDS', def: '25', kind: 'int', help: 'how long a graceful stop (SIGTERM, SIGINT) may take: past it the process logs "shutdown did not finish in time" and exits with status 1, a crash the stores recover from. Keep it below your supervisor\'s own limit (systemd TimeoutStopSec, Kubernetes terminationGracePeriodSeconds: 30 by default), seconds' },
  { key: 'metricsPort', flag: '--metrics-port', env: 'HEADWATER_METRICS_PORT', def: undefined, kind: 'int', help: 'also serve GET /metrics without a credential on this port (bind it to a private network); unset: only GET /metrics on the main port with the operator token' },
  { key: 'frontEnd', flag: '--front-end', env: 'HEADWATER_FRONT_END', def: 'auto', kind: 'string', help: 'HTTP front end: auto (the first uWebSockets.js build that loads on this Node and libc, else node:http with a warning) | uws (refuse to start without uWS) | node (node:http, skipping uWS)' },
  { key: 'trustedProxies', flag: '--trusted-proxies', env: 'HEADWATER_TRUSTED_PROXIES', def: undefined, kind: 'string', help: 'comma-separated addresses and CIDR ranges of reverse proxies (e.g. 10.0.0.0/8,::1) whose X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Proto are believed; from any other peer they are ignored. Unset: none (the peer is the client)' },
  { key: 'publicUrl', flag: '--public-url', env: 'HEADWATER_PUBLIC_URL', def: undefined, kind: 'string', help: 'the URL clients reach this service at (https://hw.example.com), for documents that point back here (the Segment settings apiHost) when no trusted proxy forwards a host; unset: the request\'s own Host header' },
  { key: 'segmentCorsOrigins', flag: '--segment-cors-origins', env: 'HEADWATER_SEGMENT_CORS_ORIGINS', def: '*', kind: 'string', help: 'origins allowed to call /segment/v1 from a browser: * (any) or a comma-separated list like https://shop.example,https://www.example' },
  { key: 'logLevel', flag: '--log-level', env: 'HEADWATER_LOG_LEVEL', def: 'info', kind: 'string', help: 'debug | info | warn | error | silent' },
];

export { ConfigError };

/** Shorter operator tokens are refused at start: they could be guessed. Any value of this length works, whatever its prefix. */
export const MIN_OPERATOR_TOKEN = 16;

/** Flags win over environment variables, which win over defaults. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): Config {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new ConfigError(`unexpected argument ${a}`);
    const eq = a.indexOf('=');
    if (eq !== -1) { flags.set(a.slice(0, eq), a.slice(eq + 1)); continue; }
    const opt = OPTIONS.find((o) => o.flag === a);
    if (!opt) throw new ConfigError(`unknown option ${a}`);
    if (opt.kind === 'bool' && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) { flags.set(a, 'true'); continue; }
    flags.set(a, argv[++i] ?? '');
  }
  for (const f of flags.keys()) if (!OPTIONS.some((o) => o.flag === f)) throw new ConfigError(`unknown option ${f}`);
  const out: Record<string, unknown> = {};
  for (const o of OPTIONS) {
    const raw = flags.get(o.flag) ?? (env[o.env] !== undefined && env[o.env] !== '' ? env[o.env] : o.def);
    if (raw === undefined) continue;
    if (o.kind === 'int') {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${o.flag} / ${o.env} must be a non-negative integer, got ${raw}`);
      out[o.key] = n;
    } else if (o.kind === 'bool') out[o.key] = raw === 'true' || raw === '1';
    else out[o.key] = raw;
  }
  const cfg = out as unknown as Config;
  cfg.dataDir = resolve(cfg.dataDir);
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(cfg.logLevel)) throw new ConfigError(`bad log level ${cfg.logLevel}`);
  if (!FRONT_END_MODES.includes(cfg.frontEnd)) throw new ConfigError(`--front-end / HEADWATER_FRONT_END must be auto, uws or node, got ${cfg.frontEnd}`);
  if (cfg.workers < 1) cfg.workers = 1;
  if (cfg.operatorToken !== undefined && cfg.operatorToken.trim().length < MIN_OPERATOR_TOKEN) {
    throw new ConfigError(`--operator-token / HEADWATER_OPERATOR_TOKEN is ${cfg.operatorToken.trim().length} characters; use at least ${MIN_OPERATOR_TOKEN} (e.g. openssl rand -hex 32), or unset it to have one generated`);
  }
  if (cfg.operatorToken !== undefined) cfg.operatorToken = cfg.operatorToken.trim();
  for (const k of ['webhookAttempts', 'webhookDisableAfter', 'webhookTimeoutMs', 'webhookConcurrency', 'webhookConcurrencyPerWebhook', 'webhookConcurrencyPerOrg', 'webhookPollMs', 'emailAttempts', 'emailPollMs'] as const) {
    if (cfg[k] < 1) { const o = OPTIONS.find((x) => x.key === k)!; throw new ConfigError(`${o.flag} / ${o.env} must be at least 1, got ${cfg[k]}`); }
  }
  if (cfg.embeddedCacheMb < 16 || cfg.embeddedCacheMb > 4096) throw new ConfigError(`--embedded-cache-mb / HEADWATER_EMBEDDED_CACHE_MB must be 16 to 4096, got ${cfg.embeddedCacheMb}`);
  if (cfg.compileThreads < 1) cfg.compileThreads = 1;
  if (cfg.shutdownSeconds < 1) throw new ConfigError(`--shutdown-seconds / HEADWATER_SHUTDOWN_SECONDS must be at least 1, got ${cfg.shutdownSeconds}`);
  if (cfg.journeyThreads < 1) cfg.journeyThreads = 1;
  for (const k of ['journeyFuel', 'journeyTimeoutMs', 'journeyMemoryMb', 'journeyPollMs', 'journeyMaxRestarts', 'journeyRestartsPerMinute'] as const) {
    if (cfg[k] < 1) { const o = OPTIONS.find((x) => x.key === k)!; throw new ConfigError(`${o.flag} / ${o.env} must be at least 1, got ${cfg[k]}`); }
  }
  if (cfg.journeyLeaseMs < cfg.journeyTimeoutMs) throw new ConfigError(`--journey-lease-ms (${cfg.journeyLeaseMs}) must be at least --journey-timeout-ms (${cfg.journeyTimeoutMs})`);
  if (cfg.trustedProxies !== undefined) {
    try { new TrustedProxies(cfg.trustedProxies); } catch (err) { throw new ConfigError(`--trusted-proxies / HEADWATER_TRUSTED_PROXIES: ${(err as Error).message}`); }
  }
  if (cfg.publicUrl !== undefined) {
    let ok = false;
    try { const u = new URL(cfg.publicUrl); ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' && !u.username && !u.password; } catch { ok = false; }
    if (!ok) throw new ConfigError(`--public-url / HEADWATER_PUBLIC_URL must be an http(s) URL with a host and no credentials, got ${cfg.publicUrl}`);
  }
  if (cfg.smtpUrl !== undefined) {
    // Checked here so a typo stops the start instead of failing every e-mail; never echoed (it may hold a password).
    let ok = false;
    try { const u = new URL(cfg.smtpUrl); ok = (u.protocol === 'smtp:' || u.protocol === 'smtps:') && u.hostname !== ''; } catch { ok = false; }
    if (!ok) throw new ConfigError('--smtp-url / SMTP_URL must be an smtp:// or smtps:// URL with a host, e.g. smtp://user:pass@mail.example.com:587');
  }
  // The Message-ID takes its domain from the From address, and servers refuse a From without one.
  if (!/^[^\s@<>]+@[^\s@<>]+$|^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(cfg.emailFrom.trim())) {
    throw new ConfigError(`--email-from / HEADWATER_EMAIL_FROM must be an address (a@example.com or Name <a@example.com>), got ${cfg.emailFrom}`);
  }
  return cfg;
}

export function configHelp(): string {
  const rows = OPTIONS.map((o) => `  ${o.flag.padEnd(26)} ${o.env.padEnd(34)} ${(o.def ?? '(unset)').padEnd(14)} ${o.help}`);
  return ['headwater serve [options]', '', `  ${'flag'.padEnd(26)} ${'environment'.padEnd(34)} ${'default'.padEnd(14)} meaning`, ...rows].join('\n');
}

/** The outbound webhook sender's settings (serve and worker run one each). */
export function webhookSettings(c: Config): Omit<SenderOptions, 'pool' | 'log' | 'decrypt' | 'wakes'> {
  return {
    attempts: c.webhookAttempts, backoffMs: c.webhookBackoffMs, disableAfter: c.webhookDisableAfter, timeoutMs: c.webhookTimeoutMs,
    concurrency: c.webhookConcurrency, perWebhook: c.webhookConcurrencyPerWebhook, perOrg: c.webhookConcurrencyPerOrg, pollMs: c.webhookPollMs, allowPrivate: c.webhookAllowPrivate,
  };
}

/** The e-mail sender's settings (serve and worker run one each). */
export function emailSettings(c: Config): Omit<EmailSenderOptions, 'pool' | 'log' | 'wakes'> {
  return { smtpUrl: c.smtpUrl, from: c.emailFrom, maxAttempts: c.emailAttempts, retryBaseMs: c.emailRetryBaseMs, pollMs: c.emailPollMs };
}

/** The journey runner's settings (serve and worker run one each). */
export function journeySettings(c: Config) {
  return {
    threads: c.journeyThreads, leaseMs: c.journeyLeaseMs, pollMs: c.journeyPollMs,
    restarts: { max: c.journeyMaxRestarts, perMinute: c.journeyRestartsPerMinute },
    limits: { fuel: c.journeyFuel, wallMs: c.journeyTimeoutMs, memoryBytes: c.journeyMemoryMb * 1024 * 1024 },
  };
}
