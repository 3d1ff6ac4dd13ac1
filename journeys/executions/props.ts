// Validation of `email.send` props against a template version's `propsSchema`, on a props thread
// (workers/props-task.ts), never on the event loop of the process. Schemas are user input, so:
// - each template version compiles in an Ajv instance of its own, so an `$id` names a schema inside
//   that version only (two orgs, or two versions, with the same `$id` never meet);
// - patterns (`pattern`, `patternProperties`, `propertyNames`) run on RE2 (re2js: linear-time
//   matching, no catastrophic backtracking; a pattern RE2 cannot express does not compile);
// - a schema longer than MAX_SCHEMA_CHARS of JSON is refused before Ajv sees it;
// - compiled versions sit in a bounded LRU owned by the validator (one per thread).
import { Ajv, type ValidateFunction } from 'ajv';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';

/** JSON characters of a propsSchema; larger ones are refused (compile time grows with size). */
export const MAX_SCHEMA_CHARS = 64 * 1024;
/** Compiled template versions kept per thread. */
export const MAX_COMPILED = 256;

export interface PropsInput { versionId: string; schema: unknown; props: unknown }
/** `schema`: the propsSchema itself is refused (too large, does not compile); `props`: they do not match it. */
export type PropsCheck = { ok: true } | { ok: false; bad: 'schema' | 'props'; message: string };

// Ajv's engine contract: a factory of objects with `test`; `code` only matters for standalone code.
// RE2 is Unicode-aware by default, so Ajv's `u` flag needs no translation.
const re2 = Object.assign((pattern: string) => RE2JS.compile(pattern), { code: 're2js' });

type Compiled = { validate: ValidateFunction } | { error: string };

export interface PropsValidator { check(input: PropsInput): PropsCheck }

export function createPropsValidator(max = MAX_COMPILED): PropsValidator {
  const cache = new LRUCache<string, Compiled>({ max });

  const compile = (schema: unknown): Compiled => {
    const json = JSON.stringify(schema ?? {});
    if (json.length > MAX_SCHEMA_CHARS) return { error: `propsSchema has ${json.length} characters of JSON; at most ${MAX_SCHEMA_CHARS} are allowed` };
    // strict: false keeps schemas written for other drafts usable (unknown keywords and formats are
    // ignored) and skips Ajv's strict-mode checks, one of which runs patterns with `new RegExp`.
    const ajv = new Ajv({ allErrors: false, strict: false, logger: false, code: { regExp: re2 } });
    try { return { validate: ajv.compile(JSON.parse(json)) }; } catch (e) { return { error: `propsSchema does not compile: ${(e as Error).message}` }; }
  };

  return {
    check({ versionId, schema, props }) {
      let c = cache.get(versionId);
      if (!c) { c = compile(schema); cache.set(versionId, c); }
      if ('error' in c) return { ok: false, bad: 'schema', message: c.error };
      if (c.validate(props)) return { ok: true };
      const e = c.validate.errors?.[0];
      return { ok: false, bad: 'props', message: `props${e?.instancePath ?? ''}: ${e?.message ?? 'do not match the propsSchema'}` };
    },
  };
}
