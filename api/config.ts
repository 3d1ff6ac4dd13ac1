// Every setting of `headwater serve`: a flag, its environment variable and its default (decisions §11).
import { resolve } from 'node:path';

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
  bodyLimit: number;
  artifactLimit: number;
  webhookAllowPrivate: boolean;
  smtpUrl?: string;
  jwtIssuer?: string;
  jwksUrl?: string;
  jwtOrgClaim: string;
  jwtRoleClaim: string;
  sessionTtlSeconds: number;
  segmentSweepMs: number;
  segmentPreviewCap: number;
  eventLingerMs: number;
  segmentCorsOrigins: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

interface Opt { key: keyof Config; flag: string; env: string; def: string | undefined; kind: 'string' | 'int' | 'bool'; help: string }

export const OPTIONS: Opt[] = [
  { key: 'port', flag: '--port', env: 'PORT', def: '8080', kind: 'int', help: 'HTTP port (0 picks a free one)' },
  { key: 'host', flag: '--host', env: 'HOST', def: '0.0.0.0', kind: 'string', help: 'address to listen on' },
  { key: 'dataDir', flag: '--data-dir', env: 'HEADWATER_DATA_DIR', def: './.headwater', kind: 'string', help: 'embedded stores, generated secrets and the operator token live here' },
  { key: 'operatorToken', flag: '--operator-token', env: 'HEADWATER_OPERATOR_TOKEN', def: undefined, kind: 'string', help: 'operator bearer token; generated into the data dir and printed once when unset' },
  { key: 'secretKey', flag: '--secret-key', env: 'HEADWATER_SECRET_KEY', def: undefined, kind: 'string', help: 'master key for session signing and secrets at rest; generated into the data dir when unset (set it when several processes share a database)' },
  { key: 'databaseUrl', flag: '--database-url', env: 'DATABASE_URL', def: undefined, kind: 'string', help: 'PostgreSQL URL; embedded PGlite when unset' },
  { key: 'natsUrl', flag: '--nats-url', env: 'NATS_URL', def: undefined, kind: 'string', help: 'NATS JetStream URL; in-process stream when unset' },
  { key: 'clickhouseUrl', flag: '--clickhouse-url', env: 'CLICKHOUSE_URL', def: undefined, kind: 'string', help: 'ClickHouse HTTP URL; embedded chDB when unset' },
  { key: 'streamPrefix', flag: '--stream-prefix', env: 'HEADWATER_STREAM_PREFIX', def: undefined, kind: 'string', help: 'prefix of the JetStream stream, consumer and subject names, so several deployments can share one NATS server' },
  { key: 'workers', flag: '--workers', env: 'HEADWATER_WORKERS', def: '2', kind: 'int', help: 'Piscina worker threads' },
  { key: 'bodyLimit', flag: '--body-limit', env: 'HEADWATER_BODY_LIMIT', def: String(1024 * 1024), kind: 'int', help: 'request body limit in bytes (413 payload_too_large)' },
  { key: 'artifactLimit', flag: '--artifact-limit', env: 'HEADWATER_ARTIFACT_LIMIT', def: String(32 * 1024 * 1024), kind: 'int', help: 'artifact upload limit in bytes (413 artifact_too_large)' },
  { key: 'webhookAllowPrivate', flag: '--webhook-allow-private', env: 'HEADWATER_WEBHOOK_ALLOW_PRIVATE', def: 'false', kind: 'bool', help: 'let outbound webhooks reach loopback and private addresses' },
  { key: 'smtpUrl', flag: '--smtp-url', env: 'SMTP_URL', def: undefined, kind: 'string', help: 'SMTP transport for journey e-mail; local outbox when unset' },
  { key: 'jwtIssuer', flag: '--jwt-issuer', env: 'HEADWATER_JWT_ISSUER', def: undefined, kind: 'string', help: 'issuer (iss) of an external identity provider whose session JWTs are accepted' },
  { key: 'jwksUrl', flag: '--jwks-url', env: 'HEADWATER_JWKS_URL', def: undefined, kind: 'string', help: 'JWKS URL of that identity provider' },
  { key: 'jwtOrgClaim', flag: '--jwt-org-claim', env: 'HEADWATER_JWT_ORG_CLAIM', def: 'org_id', kind: 'string', help: 'claim holding the org id in external session tokens' },
  { key: 'jwtRoleClaim', flag: '--jwt-role-claim', env: 'HEADWATER_JWT_ROLE_CLAIM', def: 'org_role', kind: 'string', help: 'claim holding the role (org:admin | org:member) in external session tokens' },
  { key: 'sessionTtlSeconds', flag: '--session-ttl', env: 'HEADWATER_SESSION_TTL', def: String(30 * 24 * 3600), kind: 'int', help: 'lifetime of built-in session tokens, seconds' },
  { key: 'segmentSweepMs', flag: '--segment-sweep-ms', env: 'HEADWATER_SEGMENT_SWEEP_MS', def: '60000', kind: 'int', help: 'how often segment withinDays windows are moved to now (exits and entries of profiles whose events aged out), milliseconds' },
  { key: 'segmentPreviewCap', flag: '--segment-preview-cap', env: 'HEADWATER_SEGMENT_PREVIEW_CAP', def: '10000', kind: 'int', help: 'profiles a segment preview scans at most' },
  { key: 'eventLingerMs', flag: '--event-linger-ms', env: 'HEADWATER_EVENT_LINGER_MS', def: '250', kind: 'int', help: 'how long the event writer waits to fill a ClickHouse insert (up to 5,000 events), milliseconds: fewer, larger inserts cost ClickHouse less merging' },
  { key: 'segmentCorsOrigins', flag: '--segment-cors-origins', env: 'HEADWATER_SEGMENT_CORS_ORIGINS', def: '*', kind: 'string', help: 'origins allowed to call /segment/v1 from a browser: * (any) or a comma-separated list like https://shop.example,https://www.example' },
  { key: 'logLevel', flag: '--log-level', env: 'HEADWATER_LOG_LEVEL', def: 'info', kind: 'string', help: 'debug | info | warn | error | silent' },
];

export class ConfigError extends Error {}

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
  if (cfg.workers < 1) cfg.workers = 1;
  return cfg;
}

export function configHelp(): string {
  const rows = OPTIONS.map((o) => `  ${o.flag.padEnd(26)} ${o.env.padEnd(34)} ${(o.def ?? '(unset)').padEnd(14)} ${o.help}`);
  return ['headwater serve [options]', '', `  ${'flag'.padEnd(26)} ${'environment'.padEnd(34)} ${'default'.padEnd(14)} meaning`, ...rows].join('\n');
}
