// The OpenAPI 3.1 document generated from the route list (build.ts writes it to openapi.json):
// titled schemas become components, every route an operation with its generated error answers.
import type { TSchema } from '@sinclair/typebox';
import { DATE_TIME_MAX, DATE_TIME_MIN } from './storable.js';
import type { RouteDef, Scheme } from './route.js';
import { description } from './openapi-intro.js';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** Strips TypeBox's symbol keys (and any non-JSON value). */
export const plain = (schema: TSchema): JsonObject => JSON.parse(JSON.stringify(schema)) as JsonObject;

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

export function buildOpenApi(list: RouteDef[]): JsonObject {
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
