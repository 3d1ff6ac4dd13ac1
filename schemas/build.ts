// Build step (run after tsc as `node dist/schemas/build.js`): writes, beside this file,
//   generated/validators.cjs  Ajv standalone validators, one per route part: <routeId>_body|_query|_params
//   generated/openapi.json    the OpenAPI 3.1 document served at /openapi.json
// Nothing compiles a schema at run time.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATE_TIME_MAX, DATE_TIME_MIN } from './storable.js';
import { Ajv } from 'ajv';
import type { Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import standaloneModule from 'ajv/dist/standalone/index.js';
import type { TSchema } from '@sinclair/typebox';
import { routes } from './routes.js';
import type { RouteDef } from './route.js';
import { buildOpenApi, plain, type Json, type JsonObject } from './openapi.js';

// CommonJS interop: these modules are `module.exports = fn` with `exports.default = fn`.
// TypeScript (NodeNext) types the default import as the module object, whose `default` is the function.
const addFormats = addFormatsModule.default;
const standaloneCode = standaloneModule.default;

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

// ---------------------------------------------------------------- main

checkRoutes(routes);
const validators = buildValidators(routes);
const openapi = buildOpenApi(routes);
mkdirSync(outDir, { recursive: true });
// A file whose content is unchanged is left alone: a test run reading it meanwhile (CI runs its two
// passes at once, each starting with the build) never sees it half-written.
const put = (file: string, text: string) => {
  const path = join(outDir, file);
  if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
};
put('validators.cjs', validators.source);
put('openapi.json', JSON.stringify(openapi, null, 2) + '\n');
console.log(`schemas: ${routes.length} routes, ${validators.names.length} validators -> ${outDir}`);
