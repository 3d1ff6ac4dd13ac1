// `headwater push [DIR] --app APP_ID`: build every journey and template of a project, upload the
// artifacts the org does not have yet (HEAD each, PUT the missing), then create the push.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stripTypes } from './strip.js';
import { bundleFiles } from './bundle.js';
import { createClient, type Client } from './client.js';
import { readDefinition } from './definitions.js';
import { buildManifest, checkManifest, type Built } from './manifest.js';
import { packSource, sha256 } from './pack.js';
import { readProject } from './project.js';
import { fail, ok, oneLine, type Result } from './result.js';
import { extractSpine } from './spine.js';
import { SDK_FILE, sdkName } from './tool.js';
import type { Push } from '../../schemas/mod.js';

export interface PushOptions {
  dir: string;
  appId: string;
  url: string;
  token: string;
  /** Where the token came from (`--token`, `HEADWATER_TOKEN`), said when it is refused. */
  tokenFrom?: string;
  /** Progress lines (files bundled, artifacts uploaded); undefined for none. */
  progress?: (line: string) => void;
  /** Wait until every new version has compiled (default true); at most this long. */
  wait?: boolean;
  waitMs?: number;
}

export interface PushOutcome {
  push: Push; uploaded: number; skipped: number;
  /** The project file of each definition, by `kind:key`: where a version that failed to compile came from. */
  files: Record<string, string>;
}

interface Artifact { digest: string; kind: 'bundle' | 'source'; bytes: Buffer }

export async function pushProject(o: PushOptions): Promise<Result<PushOutcome>> {
  const say = o.progress ?? (() => {});
  const dir = resolve(o.dir);
  const project = readProject(dir);
  if (!project.ok) return project;

  // Everything local first: a project that does not build fails without touching the network.
  const t0 = Date.now();
  const bundles = await bundleFiles(dir, project.value.files, SDK_FILE);
  if (!bundles.ok) return bundles;
  say(`bundled ${bundles.value.length} file${bundles.value.length === 1 ? '' : 's'} in ${Date.now() - t0} ms`);

  // esbuild answers transforms concurrently: read every definition and outline at once.
  const read = await Promise.all(bundles.value.map(async (b) => {
    const [def, spine] = await Promise.all([readDefinition(b), b.kind === 'journey' ? spineOf(dir, b.file) : ok(undefined)]);
    return { b, def, spine };
  }));
  const built: Built[] = [];
  const artifacts = new Map<string, Artifact>();
  for (const { b, def, spine } of read) {
    if (!def.ok) return def;
    if (!spine.ok) return spine;
    const bytes = Buffer.from(b.code, 'utf8');
    const digest = sha256(bytes);
    artifacts.set(digest, { digest, kind: 'bundle', bytes });
    built.push({ file: b.file, definition: def.value, bundleDigest: digest, spine: spine.value });
  }
  say(`read ${built.length} definition${built.length === 1 ? '' : 's'}`);
  const source = await packSource(dir);
  say(`packed ${source.files.length} source file${source.files.length === 1 ? '' : 's'} (${(source.bytes.length / 1024).toFixed(1)} KiB)`);
  artifacts.set(source.digest, { digest: source.digest, kind: 'source', bytes: source.bytes });
  const manifest = buildManifest({ sdk: sdkName(), sourceDigest: source.digest, purposes: project.value.purposes, built });
  const checked = checkManifest(manifest, built);
  if (!checked.ok) return checked;

  const files = Object.fromEntries(built.map((b) => [`${b.definition.kind}:${b.definition.key}`, b.file]));
  const client = createClient(o.url, o.token, o.tokenFrom);
  const me = await client.me();
  if (!me.ok) return me;
  // /v1/users/me answers every credential; pushes take only a session or the pipeline key.
  if (me.value.scheme !== 'session' && me.value.scheme !== 'pipelineKey') {
    const what = me.value.scheme === 'apiKey' ? 'an ingestion API key' : me.value.scheme === 'deployKey' ? 'a deploy key' : `a ${me.value.scheme} credential`;
    return fail(`${what} cannot push: pass a session token or the org pipeline key with --token or HEADWATER_TOKEN`);
  }
  say(`checking ${artifacts.size} artifacts at ${o.url}`);
  const sent = await upload(client, [...artifacts.values()], say);
  if (!sent.ok) return sent;
  const push = await client.createPush({ manifest, appId: o.appId, orgId: me.value.orgId });
  if (!push.ok) return push;
  if (o.wait === false) return ok({ push: push.value, ...sent.value, files });
  // The pipeline key may create pushes but not read them back (it is refused everywhere but push
  // creation, artifacts and /v1/users/me): with it the results are read with a session instead.
  if (me.value.scheme === 'pipelineKey') {
    say('not waiting for the compile results: the pipeline key cannot read pushes; `headwater journeys` with a session shows them');
    return ok({ push: push.value, ...sent.value, files });
  }
  const done = await waitCompiled(client, push.value, o.waitMs ?? WAIT_MS, say);
  if (!done.ok) return done;
  return ok({ push: done.value, ...sent.value, files });
}

const WAIT_MS = 5 * 60_000;

/** Polls the push until none of its versions is still compiling (or `waitMs` passed: an error). */
async function waitCompiled(client: Client, push: Push, waitMs: number, say: (l: string) => void): Promise<Result<Push>> {
  const deadline = Date.now() + waitMs;
  let p = push;
  let delay = 100;
  let said = -1;
  for (;;) {
    const compiling = p.versions.filter((v) => v.status === 'compiling').length;
    if (compiling === 0) return ok(p);
    if (compiling !== said) { say(`compiling: ${p.versions.length - compiling} of ${p.versions.length} done`); said = compiling; }
    if (Date.now() >= deadline) return fail(`push ${p.id}: ${compiling} version(s) still compiling after ${Math.round(waitMs / 1000)} s; see headwater journeys, or push with --no-wait`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 1000);
    const next = await client.getPush(p.id);
    if (!next.ok) return next;
    p = next.value;
  }
}

async function spineOf(dir: string, file: string): Promise<Result<Built['spine']>> {
  try {
    const js = await stripTypes(readFileSync(join(dir, file), 'utf8'), file);
    return ok(extractSpine(js));
  } catch (err) {
    return fail(`${file}: cannot outline the journey: ${oneLine(err)}`);
  }
}

const PARALLEL = 6;

async function upload(client: Client, all: Artifact[], say: (l: string) => void): Promise<Result<{ uploaded: number; skipped: number }>> {
  let uploaded = 0;
  let skipped = 0;
  let error: string | undefined;
  let next = 0;
  const worker = async () => {
    while (!error && next < all.length) {
      const a = all[next++]!;
      const has = await client.has(a.digest);
      if (!has.ok) { error = has.error; return; }
      if (has.value) { skipped++; continue; }
      const put = await client.put(a.digest, a.kind, a.bytes);
      if (!put.ok) { error = put.error; return; }
      uploaded++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, all.length) }, worker));
  if (error) return fail(error);
  say(`artifacts: ${uploaded} uploaded, ${skipped} already stored`);
  return ok({ uploaded, skipped });
}
