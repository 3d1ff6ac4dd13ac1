// Builds the push manifest (protocol 3) from the project's definitions and checks it against the
// same compiled schema the service validates with, so a limit is refused locally with one line
// naming the file and the field.
import { loadValidators, type JourneyEntryInput, type ManifestInput, type PurposeEntry, type SpineStep, type TemplateEntryInput } from '../../schemas/mod.js';
import type { Definition } from './definitions.js';
import { fail, ok, type Result } from './result.js';

export interface Built {
  file: string;
  definition: Definition;
  bundleDigest: string;
  /** Only for journeys. */
  spine?: SpineStep[];
}

const JOURNEY_FIELDS = ['key', 'tags', 'trigger', 'purpose', 'enrollment', 'description', 'from', 'exitOn', 'goal', 'holdout'] as const;
const TEMPLATE_FIELDS = ['key', 'tags', 'sendClass', 'verifyLink', 'unsubscribeLink', 'propsSchema'] as const;

function pick(options: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) if (options[f] !== undefined) out[f] = options[f];
  return out;
}

/** The entries are made of the definitions' options as the user wrote them; checkManifest vets them. */
export function buildManifest(o: { sdk: string; sourceDigest: string; purposes: PurposeEntry[]; built: Built[] }): ManifestInput {
  const journeys: JourneyEntryInput[] = [];
  const templates: TemplateEntryInput[] = [];
  for (const b of o.built) {
    const opts = b.definition.options;
    if (b.definition.kind === 'journey') {
      journeys.push({ tags: [], ...pick(opts, JOURNEY_FIELDS), key: b.definition.key, spine: b.spine ?? [], bundle: b.bundleDigest } as unknown as JourneyEntryInput);
    } else {
      templates.push({ tags: [], unsubscribeLink: false, propsSchema: {}, ...pick(opts, TEMPLATE_FIELDS), key: b.definition.key, bundle: b.bundleDigest } as unknown as TemplateEntryInput);
    }
  }
  return { protocol: 3, sdk: o.sdk, journeys, templates, purposes: o.purposes, source: o.sourceDigest };
}

/** One line naming the first problem (file and field), or ok. */
export function checkManifest(m: ManifestInput, built: Built[]): Result<void> {
  const validate = loadValidators().pushesCreate_body!;
  // The validator fills defaults in place: check a copy so that what is sent is what was built.
  if (!validate({ data: { manifest: structuredClone(m), appId: '', orgId: '' } })) {
    const e = validate.errors?.[0];
    const ptr = (e?.instancePath ?? '').replace(/^\/data\/manifest/, '');
    const m1 = /^\/(journeys|templates)\/(\d+)(\/.*)?$/.exec(ptr);
    let where = `manifest ${ptr || '/'}`;
    if (m1) {
      const kind = m1[1] === 'journeys' ? 'journey' : 'template';
      const file = built.filter((b) => b.definition.kind === kind)[Number(m1[2])]?.file;
      const field = (m1[3] ?? '').slice(1).replace(/\//g, '.');
      if (file) where = `${file}: ${field || kind}`;
    } else if (/^\/purposes\/\d+/.test(ptr)) {
      where = `headwater.json: purposes${ptr.slice('/purposes'.length).replace(/\/(\d+)/, '[$1]').replace(/\//g, '.')}`;
    } else if (ptr === '/journeys' || ptr === '/templates' || ptr === '/purposes') {
      where = `project: ${ptr.slice(1)}`;
    }
    return fail(`${where} ${e?.message ?? 'is invalid'}${e?.keyword === 'enum' || e?.keyword === 'const' ? ` (${JSON.stringify(e.params)})` : ''}`);
  }
  for (const kind of ['journey', 'template'] as const) {
    const seen = new Map<string, string>();
    for (const b of built.filter((x) => x.definition.kind === kind)) {
      const other = seen.get(b.definition.key);
      if (other) return fail(`${b.file}: ${kind} key "${b.definition.key}" is also the key of ${other}`);
      seen.set(b.definition.key, b.file);
    }
  }
  const declared = new Set((m.purposes ?? []).map((p) => p.key));
  for (const b of built) {
    const purpose = b.definition.options.purpose;
    if (b.definition.kind === 'journey' && typeof purpose === 'string' && !declared.has(purpose)) {
      return fail(`${b.file}: purpose "${purpose}" is not declared in headwater.json purposes`);
    }
  }
  return ok(undefined);
}
