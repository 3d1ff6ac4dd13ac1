// Journey-project fixtures for server tests: bundles built with esbuild from small source strings
// against the built SDK (as `headwater push` bundles them), a real gzip tarball as the source
// archive, uploads and manifests.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { create as tarCreate } from 'tar';
import { call, type TestServer } from './server.js';
import { SDK_FILE, sdkPlugin } from '../../cli/project/index.js';

export const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** An ESM bundle (format esm, platform neutral, target es2020, self-contained) of `source`. */
export async function bundle(source: string, loader: 'js' | 'ts' = 'js'): Promise<Buffer> {
  const out = await build({
    stdin: { contents: source, loader, resolveDir: process.cwd() },
    bundle: true, format: 'esm', platform: 'neutral', target: 'es2020', write: false, logLevel: 'silent',
    plugins: [sdkPlugin(SDK_FILE)],
  });
  return Buffer.from(out.outputFiles[0]!.contents);
}

export const journeySource = (key: string, body = 'await ctx.sleep("1s");', extra = '') =>
  `import { journey } from 'headwater/sdk';\n${extra}\nexport default journey({ key: ${JSON.stringify(key)}, trigger: { event: 'signed_up' }, purpose: 'onboarding' }, async (ctx) => { ${body} });`;
export const templateSource = (key: string, extra = '') =>
  `import { template } from 'headwater/sdk';\n${extra}\nexport default template({ key: ${JSON.stringify(key)}, sendClass: 'transactional', verifyLink: false }, (props) => ({ subject: 'Hi', html: '<p>hi</p>', text: 'hi' }));`;

/** A gzip tarball of `files` (name -> content). */
export async function tarball(files: Record<string, string>): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'hw-src-'));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    const parts: Buffer[] = [];
    const stream = tarCreate({ gzip: true, cwd: dir, portable: true }, Object.keys(files));
    for await (const c of stream as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
    return Buffer.concat(parts);
  } finally { rmSync(dir, { recursive: true, force: true }); }
}

export async function upload(s: TestServer, token: string, bytes: Buffer, kind: 'bundle' | 'source' = 'bundle'): Promise<string> {
  const digest = sha(bytes);
  const r = await call(s.url, 'PUT', `/v1/artifacts/${digest}?kind=${kind}`, { token, raw: bytes, contentType: 'application/octet-stream' });
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload failed: ${r.status} ${r.text}`);
  return digest;
}

export const journeyEntry = (key: string, bundleDigest: string, extra: Record<string, unknown> = {}) => ({
  key, trigger: { event: 'signed_up' }, purpose: 'onboarding', spine: [{ name: 'sleep', timeout: '1s' }], bundle: bundleDigest, ...extra,
});
export const templateEntry = (key: string, bundleDigest: string, extra: Record<string, unknown> = {}) => ({
  key, sendClass: 'transactional', verifyLink: false, bundle: bundleDigest, ...extra,
});

export interface ManifestParts { journeys?: unknown[]; templates?: unknown[]; purposes?: unknown[]; source: string; [k: string]: unknown }
export const manifest = (p: ManifestParts) => ({ protocol: 3, sdk: 'headwater/sdk@0.1.0', journeys: [], templates: [], ...p });

export const push = (s: TestServer, token: string, orgId: string, appId: string, m: unknown) =>
  call(s.url, 'POST', '/v1/pushes', { token, body: { data: { manifest: m, appId, orgId } } });
