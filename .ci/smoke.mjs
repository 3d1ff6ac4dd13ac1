#!/usr/bin/env node
// Smoke run of `headwater serve` on the Node binary running this script (CI runs it under Node 22
// and 24 as well as the suite's Node): embedded default, then an org, an identify, a track, and
// both read back. Prints the front end that served; exits non-zero with one clear line otherwise.
// Node built-ins only. Usage: <node> .ci/smoke.mjs [--expect uws|node:http]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const expectIdx = process.argv.indexOf('--expect');
const expect = expectIdx === -1 ? undefined : process.argv[expectIdx + 1];
const label = `smoke on Node ${process.versions.node}`;
const dataDir = mkdtempSync(join(tmpdir(), 'hw-smoke-'));
const operatorToken = `hwo_${randomBytes(24).toString('base64url')}`;
const started = Date.now();
let child;
let stderr = '';

const fail = (msg) => {
  process.stderr.write(`${label}: FAILED: ${msg}\n`);
  if (stderr) process.stderr.write(`--- server log (last 2000 chars) ---\n${stderr.slice(-2000)}\n`);
  cleanup();
  process.exit(1);
};
const cleanup = () => { if (child && child.exitCode === null) child.kill('SIGTERM'); rmSync(dataDir, { recursive: true, force: true }); };
const timer = setTimeout(() => fail('no result within 180 s'), 180_000);

child = spawn(process.execPath, [join(root, 'bin/headwater.js'), 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--operator-token', operatorToken], {
  cwd: root, env: { ...process.env, HEADWATER_LOG_LEVEL: 'info', DATABASE_URL: '', NATS_URL: '', CLICKHOUSE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'],
});
child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
child.on('exit', (code, signal) => { if (!done) fail(`headwater serve exited early (code ${code}, signal ${signal})`); });
let done = false;

const base = await new Promise((resolve) => {
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => {
    out += d;
    const m = /headwater listening on (http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
});

async function call(method, path, token, body) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify({ data: body }) });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, json, text };
}
const want = (r, status, what) => { if (r.status !== status) fail(`${what}: expected ${status}, got ${r.status} ${r.text.slice(0, 300)}`); return r.json.data; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

try {
  let ready;
  for (let i = 0; i < 100; i++) {
    ready = await call('GET', '/health/ready').catch(() => undefined);
    if (ready?.status === 200) break;
    await sleep(100);
  }
  const health = want(ready ?? { status: 0, text: 'no answer' }, 200, 'GET /health/ready');
  const frontEnd = health.frontEnd;
  const readyS = ((Date.now() - started) / 1000).toFixed(1);
  if (expect && frontEnd !== expect) fail(`front end is ${frontEnd}, expected ${expect}`);
  const org = want(await call('POST', '/v1/orgs', operatorToken, { name: `smoke-${randomBytes(4).toString('hex')}` }), 201, 'POST /v1/orgs');
  const admin = org.sessions.admin;
  const app = want(await call('POST', '/v1/apps', admin, { name: 'smoke' }), 201, 'POST /v1/apps');
  const [source] = want(await call('GET', `/v1/apps/${app.id}/sources`, admin), 200, 'GET sources');
  const userId = `u-${randomBytes(4).toString('hex')}`;
  const profile = want(await call('POST', '/v1/identify', org.apiKey, { sourceId: source.id, identifiers: { userId }, traits: { plan: 'smoke' } }), 200, 'POST /v1/identify');
  const messageId = `m-${randomBytes(4).toString('hex')}`;
  const trackR = await call('POST', '/v1/track', org.apiKey, { sourceId: source.id, identifiers: { userId }, event: 'Smoke Tested', messageId });
  if (trackR.status !== 200 && trackR.status !== 201) fail(`POST /v1/track: ${trackR.status} ${trackR.text.slice(0, 300)}`);
  const read = want(await call('GET', `/v1/profiles/${profile.id}`, admin), 200, 'GET /v1/profiles/{id}');
  if (read.traits?.plan !== 'smoke') fail(`profile read back without its trait: ${JSON.stringify(read).slice(0, 300)}`);
  let listed = false;
  for (let i = 0; i < 100 && !listed; i++) {
    const ev = want(await call('GET', `/v1/events?profileId=${profile.id}`, admin), 200, 'GET /v1/events');
    listed = ev.some((e) => e.messageId === messageId);
    if (!listed) await sleep(100);
  }
  if (!listed) fail('the tracked event was not listed by GET /v1/events within 10 s');
  const fallback = /serving through node:http/.test(stderr) ? ' (fallback warning logged)' : '';
  process.stdout.write(`${label}: ok, front end ${frontEnd}${fallback}, ready after ${readyS} s, done after ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  done = true;
  clearTimeout(timer);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  cleanup();
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
