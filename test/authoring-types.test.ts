// `headwater types` against a real service: the org's tracking plan (registered and observed events,
// traits) becomes TypeScript that the TypeScript compiler accepts for correct calls and refuses
// for a misspelt event or a property of the wrong type; the same plan gives the same bytes.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { hw } from './helpers/cli.js';
import { call, createAppFixture, startServer, trackCall } from './helpers/server.js';
import { embeddedPassOnly } from './helpers/modes.js';

embeddedPassOnly(t, 'headwater types output; the plan it reads is tested in both passes');

const s = await startServer();
t.teardown(() => s.close());
const fx = await createAppFixture(s);
const admin = fx.org.sessions.admin;
const dir = mkdtempSync(join(tmpdir(), 'hw-types-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Compiler errors of each file (strict, no emit), against the generated module. */
function compile(files: Record<string, string>): Record<string, string[]> {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const program = ts.createProgram(Object.keys(files).map((f) => join(dir, f)), {
    strict: true, noEmit: true, target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler, lib: ['lib.es2020.d.ts'], types: [], skipLibCheck: true,
  });
  const out: Record<string, string[]> = {};
  for (const name of Object.keys(files)) {
    const sf = program.getSourceFile(join(dir, name))!;
    out[name] = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)].map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' '));
  }
  return out;
}

t.test('types of the plan compile correct calls and refuse misspelt events and wrong property types', async (t) => {
  const reg = async (path: string, data: Record<string, unknown>) => {
    const r = await call(s.url, 'POST', path, { token: admin, body: { data } });
    t.equal(r.status, 201, `${path} ${r.status === 201 ? '' : r.text}`);
  };
  await reg('/v1/catalog/events', { name: 'Signed Up', properties: { plan: 'string', seats: 'number' } });
  await reg('/v1/catalog/events', { name: 'Order Completed', properties: { total: 'number', items: 'array<object>', gift: 'boolean' } });
  await reg('/v1/catalog/traits', { name: 'plan', type: 'string' });
  // Observed: a tracked event registers its name and property types (the permissive policy).
  const tr = await trackCall(s, fx, { identifiers: { userId: 'types-u' }, event: 'app_opened', properties: { screen: 'home' } });
  t.equal(tr.status, 201, tr.text);
  // A denied event is not part of the plan.
  await reg('/v1/catalog/events', { name: 'Legacy Thing', properties: {} });
  t.equal((await call(s.url, 'POST', '/v1/catalog/events/Legacy%20Thing/state', { token: admin, body: { data: { state: 'denied' } } })).status, 200);

  const out = join(dir, 'headwater-types.ts');
  const env = { HEADWATER_URL: s.url, HEADWATER_TOKEN: admin };
  const r = await hw(['types', dir], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^wrote .*headwater-types\.ts: 3 events, \d+ traits\n$/);
  const text = readFileSync(out, 'utf8');
  t.match(text, /"Order Completed": \{\n\s+"gift"\?: boolean;\n\s+"items"\?: Array<Record<string, unknown>>;\n\s+"total"\?: number;\n\s+\};\n\s+"Signed Up"/, 'events and properties sorted');
  t.match(text, /"app_opened": \{\n\s+"screen"\?: string;/, 'observed events are in');
  t.notMatch(text, /Legacy Thing/, 'denied events are not');
  t.match(text, /"plan"\?: string;/);

  // Deterministic: a second run to another file gives the same bytes.
  const again = await hw(['types', '--out', join(dir, 'again.ts')], env);
  t.equal(again.code, 0, again.stderr);
  t.equal(readFileSync(join(dir, 'again.ts'), 'utf8'), text, 'same plan, same file');

  const use = (body: string) => `import { track, typedSegment, type EventName, type Properties } from './headwater-types';
const target = { url: 'http://127.0.0.1:8080', apiKey: 'hwk_x', sourceId: 'src_x' };
const segment = typedSegment({ track: () => undefined, identify: () => undefined });
${body}
export {};
`;
  const errors = compile({
    'ok.ts': use(`void track(target, { identifiers: { userId: 'u1' }, event: 'Signed Up', properties: { plan: 'pro', seats: 3 } });
segment.track({ userId: 'u1', event: 'Order Completed', properties: { total: 9.5, items: [{ sku: 'a' }], gift: false } });
segment.identify({ userId: 'u1', traits: { plan: 'pro' } });
const name: EventName = 'app_opened';
const props: Properties<'app_opened'> = { screen: 'home' };
void name; void props;`),
    'misspelt.ts': use(`void track(target, { identifiers: { userId: 'u1' }, event: 'Sigend Up', properties: {} });`),
    'wrong-type.ts': use(`segment.track({ userId: 'u1', event: 'Signed Up', properties: { seats: 'three' } });`),
    'unknown-property.ts': use(`void track(target, { identifiers: { userId: 'u1' }, event: 'Signed Up', properties: { plna: 'pro' } });`),
    'denied.ts': use(`segment.track({ userId: 'u1', event: 'Legacy Thing' });`),
    'trait-type.ts': use(`segment.identify({ userId: 'u1', traits: { plan: 3 } });`),
  });
  t.same(errors['ok.ts'], [], 'correct calls compile');
  t.match(errors['misspelt.ts']!.join('\n'), /"Sigend Up"/, 'a misspelt event fails');
  t.match(errors['wrong-type.ts']!.join('\n'), /Type 'string' is not assignable to type 'number'/, 'a wrongly typed property fails');
  t.match(errors['unknown-property.ts']!.join('\n'), /'plna' does not exist/, 'an unknown property fails');
  t.match(errors['denied.ts']!.join('\n'), /"Legacy Thing"/, 'a denied event fails');
  t.match(errors['trait-type.ts']!.join('\n'), /Type 'number' is not assignable to type 'string'/, 'a wrongly typed trait fails');
});

t.test('types refuses a credential that cannot read the plan, in one line', async (t) => {
  const r = await hw(['types', dir], { HEADWATER_URL: s.url, HEADWATER_TOKEN: fx.key });
  t.equal(r.code, 1);
  t.match(r.stderr, /^headwater: (the service refused the credential|GET \/v1\/catalog\/(events|traits) failed: 403)/);
  t.equal(r.stderr.trimEnd().split('\n').length, 1);
});
