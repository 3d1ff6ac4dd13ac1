// Build step (run after tsc as `node dist/schemas/build.js`): writes, beside this file,
//   generated/validators.cjs  Ajv standalone validators, one per route part: <routeId>_body|_query|_params
//   generated/openapi.json    the OpenAPI 3.1 document served at /openapi.json
// Nothing compiles a schema at run time.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATE_TIME_MAX, DATE_TIME_MIN } from './storable.js';
import { Ajv } from 'ajv';
import type { Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import standaloneModule from 'ajv/dist/standalone/index.js';
import type { TSchema } from '@sinclair/typebox';
import { routes } from './routes.js';
import type { RouteDef, Scheme } from './route.js';
import { ERROR_STATUS } from './errors.js';

// CommonJS interop: these modules are `module.exports = fn` with `exports.default = fn`.
// TypeScript (NodeNext) types the default import as the module object, whose `default` is the function.
const addFormats = addFormatsModule.default;
const standaloneCode = standaloneModule.default;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

/** Strips TypeBox's symbol keys (and any non-JSON value). */
const plain = (schema: TSchema): JsonObject => JSON.parse(JSON.stringify(schema)) as JsonObject;

const ANNOTATIONS = new Set(['title', 'description', 'examples']);
const VALUE_KEYWORDS = new Set(['default', 'const', 'enum', 'examples', 'discriminator', 'required']);

/** A plain copy without annotation keywords (smaller generated code); `properties` names are kept. */
function forValidation(schema: TSchema): JsonObject {
  const walk = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: JsonObject = {};
    // Every date-time is bounded by what the stores hold (schemas/storable.ts).
    if ((node as JsonObject).format === 'date-time') { out.formatMinimum = DATE_TIME_MIN; out.formatMaximum = DATE_TIME_MAX; }
    for (const [k, v] of Object.entries(node)) {
      if (ANNOTATIONS.has(k) && typeof v !== 'object') continue;
      if ((k === 'properties' || k === 'patternProperties') && v && typeof v === 'object' && !Array.isArray(v)) {
        out[k] = Object.fromEntries(Object.entries(v).map(([p, sub]) => [p, walk(sub)]));
      } else {
        out[k] = VALUE_KEYWORDS.has(k) ? v : walk(v);
      }
    }
    return out;
  };
  return walk(plain(schema)) as JsonObject;
}

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, 'generated');

// ---------------------------------------------------------------- checks on the route list

/** Pointers of request numbers with no upper bound: a column or an interval could not hold them. */
function unboundedNumbers(node: Json, at: string): string[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => unboundedNumbers(n, `${at}/${i}`));
  if (node === null || typeof node !== 'object') return [];
  const out: string[] = [];
  const types = Array.isArray(node.type) ? node.type : [node.type];
  if ((types.includes('integer') || types.includes('number')) && node.maximum === undefined && node.exclusiveMaximum === undefined && node.const === undefined && node.enum === undefined) out.push(at);
  for (const [k, v] of Object.entries(node)) {
    if (k === 'default' || k === 'const' || k === 'enum' || k === 'examples') continue;
    out.push(...unboundedNumbers(v as Json, `${at}/${k}`));
  }
  return out;
}

function checkRoutes(list: RouteDef[]): void {
  const ids = new Set<string>();
  const ops = new Set<string>();
  for (const r of list) {
    if (!/^[a-z][A-Za-z0-9]*$/.test(r.id)) throw new Error(`route id not camelCase: ${r.id}`);
    if (ids.has(r.id)) throw new Error(`duplicate route id ${r.id}`);
    ids.add(r.id);
    const op = `${r.method} ${r.path}`;
    if (ops.has(op)) throw new Error(`duplicate route ${op}`);
    ops.add(op);
    const pathParams = [...r.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const declared = Object.keys((r.params as { properties?: object } | undefined)?.properties ?? {});
    if (pathParams.sort().join() !== declared.sort().join()) {
      throw new Error(`${r.id}: path parameters ${pathParams.join()} but params ${declared.join()}`);
    }
    if (r.body && r.rawBody) throw new Error(`${r.id}: both body and rawBody`);
    for (const [part, schema] of [['body', r.body], ['query', r.query], ['params', r.params]] as const) {
      if (schema) unboundedNumbers(plain(schema), '').forEach((ptr) => { throw new Error(`${r.id} ${part}${ptr}: a number without a maximum (give it one the store can hold)`); });
    }
  }
}

// ---------------------------------------------------------------- validators

const baseOptions: Options = {
  allErrors: false,
  useDefaults: true,
  strict: false,
  discriminator: true,
  code: { source: true, esm: false },
};

function buildValidators(list: RouteDef[]): { source: string; names: string[] } {
  const bodyAjv = new Ajv({ ...baseOptions });
  const queryAjv = new Ajv({ ...baseOptions, coerceTypes: true });
  addFormats(bodyAjv);
  addFormats(queryAjv);
  const bodyNames: Record<string, string> = {};
  const queryNames: Record<string, string> = {};
  for (const r of list) {
    if (r.body) {
      bodyAjv.addSchema(forValidation(r.body), `${r.id}_body`);
      bodyNames[`${r.id}_body`] = `${r.id}_body`;
    }
    if (r.query) {
      queryAjv.addSchema(forValidation(r.query), `${r.id}_query`);
      queryNames[`${r.id}_query`] = `${r.id}_query`;
    }
    if (r.params) {
      queryAjv.addSchema(forValidation(r.params), `${r.id}_params`);
      queryNames[`${r.id}_params`] = `${r.id}_params`;
    }
  }
  // Each instance's code is wrapped in its own function scope: both use the same generated names.
  const wrap = (code: string) => `(function (exports) {\n${code}\n})(module.exports);\n`;
  const source =
    '"use strict";\n// Generated by schemas/build.ts. Do not edit.\n' +
    wrap(standaloneCode(bodyAjv, bodyNames)) +
    wrap(standaloneCode(queryAjv, queryNames));
  return { source, names: [...Object.keys(bodyNames), ...Object.keys(queryNames)].sort() };
}

// ---------------------------------------------------------------- OpenAPI

const SECURITY: Record<Exclude<Scheme, 'none' | 'signature'>, string> = {
  operator: 'operatorToken',
  apiKey: 'orgApiKey',
  session: 'idpSession',
  deployKey: 'orgDeployKey',
  pipelineKey: 'orgPipelineKey',
  writeKey: 'segmentWriteKey',
};

/**
 * Moves every titled (sub)schema into components/schemas and references it, so the document reads
 * like the contract's resource list. `$id`/`$ref` pairs of recursive schemas become component refs.
 */
class Components {
  readonly schemas: Record<string, Json> = {};
  private readonly byKey = new Map<string, string>();

  ref(name: string): JsonObject {
    return { $ref: `#/components/schemas/${name}` };
  }

  convert(node: Json): Json {
    if (Array.isArray(node)) return node.map((n) => this.convert(n));
    if (node === null || typeof node !== 'object') return node;
    const title = typeof node.title === 'string' ? node.title : undefined;
    const id = typeof node.$id === 'string' ? node.$id : undefined;
    if (title || id) {
      const key = JSON.stringify(node);
      const known = this.byKey.get(key);
      if (known) return this.ref(known);
      const name = this.freeName((id ?? title!).replace(/[^A-Za-z0-9._-]+/g, ''));
      this.byKey.set(key, name);
      if (id && id !== name) throw new Error(`recursive schema $id ${id} must be a free component name`);
      this.schemas[name] = {}; // reserve before descending (recursion)
      this.schemas[name] = this.convertMembers(node, true);
      return this.ref(name);
    }
    return this.convertMembers(node, false);
  }

  private convertMembers(node: JsonObject, dropId: boolean): JsonObject {
    const out: JsonObject = {};
    // Every date-time is bounded by what the stores hold (schemas/storable.ts).
    if ((node as JsonObject).format === 'date-time') { out.formatMinimum = DATE_TIME_MIN; out.formatMaximum = DATE_TIME_MAX; }
    for (const [k, v] of Object.entries(node)) {
      if (k === '$id' && dropId) continue;
      if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) {
        out[k] = `#/components/schemas/${v}`;
        continue;
      }
      // Names under `properties` are not schemas; their values are.
      if ((k === 'properties' || k === 'patternProperties') && v && typeof v === 'object' && !Array.isArray(v)) {
        out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, this.convert(s)]));
        continue;
      }
      if (k === 'default' || k === 'const' || k === 'enum' || k === 'examples' || k === 'discriminator') {
        out[k] = v;
        continue;
      }
      out[k] = typeof v === 'object' ? this.convert(v) : v;
    }
    this.mapDiscriminator(node, out);
    return out;
  }

  /** A tagged union's `discriminator.mapping` (tag value -> component), so that generated clients
   * (openapi-typescript, the dashboard's types) type the tag as its real value rather than the
   * component's name. The validators are compiled from the TypeBox schemas, without it. */
  private mapDiscriminator(node: JsonObject, out: JsonObject) {
    const d = node.discriminator as JsonObject | undefined;
    if (!d || typeof d.propertyName !== 'string' || !Array.isArray(node.oneOf) || !Array.isArray(out.oneOf)) return;
    const mapping: Record<string, string> = {};
    node.oneOf.forEach((variant, i) => {
      const tag = (variant as JsonObject | null)?.properties as JsonObject | undefined;
      const value = (tag?.[d.propertyName as string] as JsonObject | undefined)?.const;
      const ref = ((out.oneOf as Json[])[i] as JsonObject | null)?.$ref;
      if (typeof value === 'string' && typeof ref === 'string') mapping[value] = ref;
    });
    if (Object.keys(mapping).length === node.oneOf.length) out.discriminator = { ...d, mapping };
  }

  private freeName(base: string): string {
    if (!(base in this.schemas)) return base;
    for (let i = 2; ; i++) if (!(`${base}${i}` in this.schemas)) return `${base}${i}`;
  }
}

function errorTable(): string {
  const byStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS)) {
    if (code.startsWith('journey_')) continue;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const rows = [...byStatus.entries()].sort((a, b) => a[0] - b[0])
    .map(([status, codes]) => `| ${status} | ${codes.map((c) => `\`${c}\``).join(', ')} |`);
  return ['| HTTP status | Codes |', '|---|---|', ...rows].join('\n');
}

function description(): string {
  const journeyCodes = Object.keys(ERROR_STATUS).filter((c) => c.startsWith('journey_')).map((c) => `\`${c}\``).join(', ');
  return `
**headwater** ingests customer profiles and behavioural events, governs which event and trait names are accepted,
groups profiles into segments, and runs durable per-profile journeys pushed from a project.

## Conventions

- **Success envelope**: \`{ data, meta }\`. \`meta\` may carry \`requestId\` (string), \`nextCursor\` (string or null) and \`hasMore\` (boolean).
  Every response, success or error, carries \`meta.requestId\`, also sent as the \`x-request-id\` header.
- **Error envelope**: \`{ error: { code, message }, meta }\`; \`code\` is one of a fixed set (table below).
  \`validation_failed\` messages name the offending field as a JSON pointer.
- **What the stores hold**: no string anywhere in a request (path segment, query parameter, body member name or value, at any
  depth, a batch call included) may contain the NUL character (U+0000) or a lone UTF-16 surrogate: 422 \`validation_failed\` naming
  it (in a batch, that call alone). Every integer has a maximum (stated in its schema); date-times run from ${DATE_TIME_MIN} to
  ${DATE_TIME_MAX} (\`formatMinimum\` / \`formatMaximum\`).
- **Request bodies** of write routes wrap their content in a top-level \`data\` object; a missing wrapper, unparseable JSON or a
  wrong content type is 400 \`malformed_request\`. Unknown members are ignored.
- **Cursor pagination**: \`cursor\` (opaque string, optional) and \`limit\` (integer 1 to 100, default 50). The next page's cursor is
  \`meta.nextCursor\`; \`meta.hasMore\` says whether more exist. Search \`q\` (0 to 200 characters) matches case-insensitively as a substring of the name.
- Identifiers are prefixed strings; timestamps are ISO 8601 date-times. The \`environment\` of an app, profile or event is \`development\` or \`production\`.
- Dashboard and ingestion routes live under \`/v1\`; \`/health/*\` and \`/openapi.json\` outside it.

## Errors

${errorTable()}

\`over_quota\` and \`rate_limited\` answers carry a \`Retry-After\` header. The ${journeyCodes} codes are journey execution failures:
they appear in an execution's \`error\` and in journal results, never as HTTP statuses. A \`/v1/sources/{sourceId}/webhook\` answer is plain text, and \`/segment/v1/...\` answers follow Segment's conventions (\`{ success, code, message }\`), not the envelope.

## Authentication

All credentials are HTTP bearer tokens. Every credential is bound to one org; a resource of another org is answered 404 \`not_found\`, never 403.

| Scheme | Credential | Valid for |
|---|---|---|
| \`operatorToken\` | \`HEADWATER_OPERATOR_TOKEN\` (generated on first start, stored in the data directory with mode 0600 and printed once, when unset) | \`POST /v1/orgs\`, \`POST /v1/orgs/{orgId}/sessions\`, \`POST /v1/orgs/{orgId}/login-links\`, \`PATCH /v1/orgs/{orgId}\` |
| \`orgApiKey\` | org API key | ingestion (\`/v1/identify\`, \`/v1/track\`, \`/v1/batch\`) and \`GET /v1/users/me\` |
| \`idpSession\` | session JWT for the org, role \`org:admin\` or \`org:member\` (built-in issuer via the operator routes, or an external identity provider: issuer + JWKS URL, org id and role as claims) | the dashboard API |
| \`orgDeployKey\` | org key with the \`deploy\` scope | the release lifecycle only (executions, artifacts, journeys, \`GET /v1/users/me\`); acts as \`org:admin\` there |
| \`orgPipelineKey\` | org pipeline key | push creation, artifacts and \`GET /v1/users/me\` |
| \`segmentWriteKey\` | source write key (\`POST /v1/sources/{id}/write-keys\`), as Basic auth \`base64(writeKey + ":")\` or \`writeKey\` in the body; public by nature | \`/segment/v1/...\` only, into its own source only |

Health routes and \`/openapi.json\` need no credential. The source webhook receiver needs no bearer: the provider's signature authorizes.
Catalog, segment, webhook, app and source mutations, \`PATCH /v1/settings\` and \`PATCH /v1/journeys/{key}\` require \`org:admin\`.

| Situation | Status | Code |
|---|---|---|
| missing, malformed, unknown, expired or revoked bearer (any scheme) | 401 | \`invalid_key\` |
| a valid credential of the wrong scheme for the route (API key on the dashboard, session on ingestion, any org credential on operator routes, the pipeline key anywhere but push creation, artifacts and \`GET /v1/users/me\`) | 401 | \`invalid_key\` |
| deploy key on a route outside the release lifecycle, ingestion included | 403 | \`deploy_key_scope\` |
| \`org:member\` session on a mutation that needs \`org:admin\` | 403 | \`forbidden\` |
| call carrying an archived source id (ingestion, receiver) | 403 | \`forbidden\` |

Rotation and revocation (\`org:admin\` sessions): \`POST /v1/credentials/rotate\` issues a new API, deploy or pipeline key; the old one
works until \`expiresOldAt\` (\`graceSeconds\`, 0 to 86400). \`POST /v1/sessions/revoke\` refuses every built-in session of the org issued
before its answer's \`revokedBefore\`. Both take effect at once in the answering process and within 5 seconds in every other process
sharing the database. Session tokens live \`HEADWATER_SESSION_TTL\`; dashboard login links (\`POST /v1/orgs/{orgId}/login-links\`) live
5 minutes, are exchanged once for a session (\`POST /v1/sessions/exchange\`) and are no session themselves.

## Limits

| Subject | Limit |
|---|---|
| Request body | 1 MiB by default (\`HEADWATER_BODY_LIMIT\`, also settable per org by the operator) -> 413 \`payload_too_large\` |
| Body nesting depth | 64 levels -> 422 \`validation_failed\` |
| Request head | up to 16 KB accepted (longer ones may get a bare 431) |
| Artifact upload | 32 MiB by default (\`HEADWATER_ARTIFACT_LIMIT\`), replacing the body limit -> 413 \`artifact_too_large\` |
| Rate | per-API-key token bucket (\`ratePerSecond\`, \`burst\`) -> 429 \`rate_limited\` with \`Retry-After\` |
| Quota | per-org monthly accepted track calls (single or batched; identify and service-written events do not count) -> 429 \`over_quota\` |
| Segment preview | scans at most 10,000 profiles (configurable); \`truncated\` says whether it stopped early |
| Batch | 1 to 500 calls |

Rate and quota are set per org by the operator (\`PATCH /v1/orgs/{orgId}\`, \`data.limits\`; \`monthlyEvents\` null for unlimited) and take effect within one second.

## Ingestion

- An app is the attribution unit; a write is attributed to the parent app of its \`sourceId\`. Profiles are scoped to (org, app), and a profile's and
  an event's \`environment\` is its app's. An unknown \`sourceId\` (or one of another org) is 404 \`not_found\`; an archived one 403 \`forbidden\`.
- **Identity resolution**: a call looks the profile up by any of its identifiers. None found: a new profile. One found: it is updated and the new
  identifiers attached. Several found: they merge into the oldest; the others get \`mergedInto\` set to the survivor, and their identifiers, traits
  (newer values win) and event history follow it. Two profiles holding different \`userId\` values are never merged; the call then lands on the
  profile of its \`userId\`. \`anonymous\` is true while a profile has only \`anonymousId\` identifiers. Concurrent calls for the same identifiers
  never create two profiles. \`traits.consent\`, when an object of booleans, is merged into \`profile.consent\` and not stored as a trait.
- **Dedup**: \`messageId\` is unique per (org, app), permanently: a replay answers 200 with the original Event, even if its body differs
  (a replay of a held event answers the quarantined answer). Identify \`messageId\` is optional and dedups the same way when given.
  Event \`timestamp\` defaults to \`receivedAt\`.
- **Governance**: ingestion is accept-by-default; rejection has exactly two sources, the deny-list (422 \`event_denied\` / \`trait_denied\`; denied always
  wins and nothing of the call is written) and the canonical trait validations (422 \`trait_validation_failed\`, naming the trait: \`email\` an e-mail
  address, \`phone\` E.164, \`createdAt\` ISO 8601 date-time, \`birthday\` ISO 8601 date, \`website\` and \`avatar\` absolute http(s) URLs, \`age\` a number
  from 0 to 150). Under the org setting \`ingestionPolicy\` \`permissive\` (default) unknown names are registered in the catalog as \`allowed\` with
  observed property types. Under \`strict\`, a track with an unknown event name is held whole and answered 200 \`{ data: { status: "quarantined" } }\`;
  on identify, unknown traits are held, the rest applied, and the Profile answered without them. Promote applies held values in arrival order;
  deny drops them.
- Every successful write updates \`lastReceivedAt\` of its source and app (visible in the next read answered by the same process; other
  front-end processes show it within about a second, the interval at which times are flushed to Postgres) and recomputes the written profile's segment memberships before it is
  answered; transitions emit \`system.segment_entered\` / \`system.segment_exited\` (properties \`segmentId\`, \`segmentName\`).

## Journeys and webhooks

- A push stores the manifest and files a version per changed journey/template key; versions compile asynchronously. Enabling is separate
  (\`PATCH /v1/journeys/{key}\`, 409 \`release_not_ready\` without a ready version). A journey runs for a profile only when \`consent[purpose]\` is true.
- Outbound webhooks follow Standard Webhooks: payload \`{ v: 1, id, type: "journey.webhook", timestamp, data }\`, headers \`webhook-id\`,
  \`webhook-timestamp\`, \`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 over \`id.timestamp.body\`). Retries with exponential backoff (default 5
  attempts); a webhook auto-disables after 5 consecutive failed deliveries, recording \`skipped_disabled\` until re-enabled.
`.trim();
}

function buildOpenApi(list: RouteDef[]): JsonObject {
  const components = new Components();
  const paths: Record<string, JsonObject> = {};
  const tagNames = new Set<string>();

  for (const r of list) {
    tagNames.add(r.tag);
    const parameters: Json[] = [];
    const addParams = (schema: TSchema | undefined, where: 'path' | 'query' | 'header') => {
      if (!schema) return;
      const obj = plain(schema);
      const required = new Set((obj.required as string[] | undefined) ?? []);
      for (const [name, s] of Object.entries((obj.properties ?? {}) as JsonObject)) {
        const sch = s as JsonObject;
        const param: JsonObject = { name, in: where, required: where === 'path' || required.has(name), schema: components.convert(sch) };
        if (typeof sch.description === 'string') param.description = sch.description;
        parameters.push(param);
      }
    };
    addParams(r.params, 'path');
    addParams(r.query, 'query');
    addParams(r.headers, 'header');

    const op: JsonObject = {
      operationId: r.id,
      tags: [r.tag],
      summary: r.summary,
      description: [
        r.description ?? r.summary,
        r.admin ? (r.auth.includes('deployKey') ? 'Requires an `org:admin` session or a deploy key.' : 'Requires `org:admin`.') : '',
      ].filter(Boolean).join('\n\n'),
    };
    const schemes = r.auth.filter((s): s is keyof typeof SECURITY => s in SECURITY);
    op.security = schemes.map((s) => ({ [SECURITY[s]]: [] }));
    if (parameters.length) op.parameters = parameters;
    if (r.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: components.convert(plain(r.body)) } } };
    } else if (r.rawBody) {
      const schema = r.rawBodySchema
        ? components.convert(plain(r.rawBodySchema))
        : { type: 'string', contentMediaType: r.rawBody };
      op.requestBody = { required: true, content: { [r.rawBody]: { schema } } };
    }
    const responses: JsonObject = {};
    for (const [status, res] of Object.entries(r.responses)) {
      const out: JsonObject = { description: res.description };
      const headers: JsonObject = {};
      if (r.auth[0] !== 'signature') {
        // Segment-style answers carry no `meta`.
        headers['x-request-id'] = { description: r.tag === 'segment' ? 'The request id.' : 'The request id (also `meta.requestId`).', schema: { type: 'string' } };
      }
      if (status === '429') headers['Retry-After'] = { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } };
      if (r.method === 'HEAD' && status === '200') headers['content-length'] = { description: 'Size of the artifact in bytes.', schema: { type: 'integer' } };
      if (Object.keys(headers).length) out.headers = headers;
      if (res.schema && r.method !== 'HEAD') {
        out.content = { [res.contentType ?? 'application/json']: { schema: components.convert(plain(res.schema)) } };
      }
      responses[status] = out;
    }
    op.responses = responses;
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }

  const TAGS: Record<string, string> = {
    health: 'Probes and this document (no credential).',
    ingestion: 'Identify and track (org API key).',
    catalog: 'The tracking plan: event and trait names with their governance state, and the quarantine queue.',
    apps: 'Apps (attribution units) and the sources under them.',
    sources: 'Sources and the public identity-provider webhook receiver.',
    segments: 'Flat predicate segments, recomputed synchronously on every write.',
    executions: 'Durable records of journey runs.',
    artifacts: 'Immutable bytes addressed by their sha256 digest, deduplicated per org.',
    pushes: 'Project pushes and the versions they file.',
    webhooks: 'The outbound webhook registry referenced by name from journeys.',
    operator: 'Operator bootstrap: organizations, sessions and limits (operator token).',
    settings: 'Org settings.',
    users: 'The calling credential.',
    events: 'Event and profile reads.',
    journeys: 'Journeys filed by pushes, and enabling them.',
    emails: 'E-mails sent by journeys.',
    stats: 'Counts over time for the dashboard: track calls by outcome, the org\'s totals and delivery failure rates.',
    privacy: 'Erasure, suppression and export of a person\'s data (docs/privacy.md).',
    segment: 'Segment-compatible ingestion: Segment\'s tracking API under `/segment/v1`, so Segment\'s SDKs send to headwater unmodified (source write key). Answers follow Segment\'s conventions, not the envelope.',
  };

  return {
    openapi: '3.1.0',
    info: { title: 'headwater', version: '1.0.0', description: description() },
    servers: [{ url: '/' }],
    tags: [...tagNames].map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: {
        operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator token (`HEADWATER_OPERATOR_TOKEN`).' },
        orgApiKey: { type: 'http', scheme: 'bearer', description: 'Org API key: ingestion only (and `GET /v1/users/me`).' },
        idpSession: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Session token for the active org (role `org:admin` or `org:member`).' },
        orgDeployKey: { type: 'http', scheme: 'bearer', description: 'Org key with the `deploy` scope: the release lifecycle only, acting as `org:admin` there.' },
        orgPipelineKey: { type: 'http', scheme: 'bearer', description: 'Org pipeline key: push creation, artifacts and `GET /v1/users/me`.' },
        segmentWriteKey: { type: 'http', scheme: 'basic', description: 'A source write key as the Basic user name with an empty password (`base64(writeKey + ":")`), or `writeKey` in the body: `/segment/v1/...` only, into its source only.' },
      },
    },
  };
}

// ---------------------------------------------------------------- main

checkRoutes(routes);
const validators = buildValidators(routes);
const openapi = buildOpenApi(routes);
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'validators.cjs'), validators.source);
writeFileSync(join(outDir, 'openapi.json'), JSON.stringify(openapi, null, 2) + '\n');
console.log(`schemas: ${routes.length} routes, ${validators.names.length} validators -> ${outDir}`);
