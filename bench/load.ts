// Load generation for the benchmark: the request bodies, and the two load generators. wrk (with a
// generated Lua script) is preferred; autocannon is the fallback when wrk is not installed. Either
// runs in its own process (wrapped in `bash -c '...; times'`, which also reports the load
// generator's own CPU time), never in the harness's or the server's process.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type CallKind = 'track' | 'identify' | 'batch';

/**
 * SDK-shaped batches (`POST /v1/batch`, kind 'batch'): `size` calls per request, each with a unique
 * messageId (runId, generator thread, call counter). users 'pool': userId among `users`; 'new': a
 * new userId per call. identifyEvery k: every k-th call of a batch is an identify (traits change
 * each time), the others track. replay: re-send the bodies of an earlier run (its runId), batch
 * numbers cycling over 2..batches of each thread, so every messageId is already stored (wrk builds
 * batch 1 of its first thread once to check the script and never sends it).
 */
export interface BatchShape {
  size: number;
  users: 'pool' | 'new';
  identifyEvery?: number;
  replay?: { runId: string; batches: number };
}

/** What one scenario sends: the path, the auth header, and how bodies are built. */
export interface LoadTarget {
  url: string;            // http://127.0.0.1:P
  kind: CallKind;         // track: /v1/track, identify: /v1/identify
  apiKey?: string;        // Authorization: Bearer <apiKey> (headwater); sent to every server alike when set
  sourceId: string;
  /** Distinct per run (warm-up, measured run, soak) so every messageId / anonymousId is new. */
  runId: string;
  /** Track calls pick their userId among this many (so most calls hit existing profiles). */
  users: number;
  /** kind 'batch' only: the batch bodies. */
  batch?: BatchShape;
}

export interface LoadSettings {
  connections: number;
  threads: number;
  durationS: number;
  timeoutS: number;
}

export interface LoadResult {
  tool: 'wrk' | 'autocannon';
  durationS: number;
  /** Answers received (any status). */
  responses: number;
  /** 2xx answers. */
  ok: number;
  /** Answers with a status >= 400 (wrk counts those; autocannon counts non-2xx). */
  non2xx: number;
  /** Answers by HTTP status. */
  statusCodes?: Record<string, number>;
  /** The first non-2xx answer: status and the start of its body. */
  firstFailure?: string;
  /** Requests written (wrk: built by the script; autocannon: started). */
  sent?: number;
  /** Sent but neither answered nor failed when the run ended (at most `connections` is normal). */
  unanswered?: number;
  /** Connect / read / write errors and timeouts. */
  socketErrors: number;
  timeouts: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  /** CPU seconds the load generator itself used (user + system), when known. */
  loadgenCpuS?: number;
  /** Batches (wrk only): per-call statuses read from the 200 answers' `data[].status`. */
  callCodes?: Record<string, number>;
  /** Requests slower than 1 s / 2 s (wrk: from its latency histogram, timeouts included). */
  over1s?: number;
  over2s?: number;
  /** Answers received by each wrk thread (a later replay cycles over what was stored). */
  perThread?: number[];
}

export const pathOf = (kind: CallKind) => (kind === 'track' ? '/v1/track' : kind === 'batch' ? '/v1/batch' : '/v1/identify');

// ---------------------------------------------------------------- bodies
// The same bodies from both generators. Track: a unique messageId, a userId among `users`, a small
// properties object. Identify: a new anonymousId on every call (creates a profile), small traits.

/** JavaScript body factory (autocannon child). `thread` separates generator threads. */
export function bodyFactory(t: Pick<LoadTarget, 'kind' | 'sourceId' | 'runId' | 'users' | 'batch'>, thread = 1): () => string {
  let n = 0;
  if (t.kind === 'batch') {
    const b = t.batch ?? { size: 20, users: 'pool' };
    return () => {
      n++;
      const bn = b.replay ? ((n - 1) % Math.max(1, b.replay.batches - 1)) + 2 : n;
      const rid = b.replay ? b.replay.runId : t.runId;
      const parts: string[] = [];
      for (let i = 1; i <= b.size; i++) {
        const k = (bn - 1) * b.size + i;
        const uid = b.users === 'new' ? `${rid}-${thread}-${k}` : `bench-u${(k * 7919 + thread * 104729) % t.users}`;
        const mid = `${rid}-${thread}-${k}`;
        parts.push(b.identifyEvery && i % b.identifyEvery === 0
          ? `{"type":"identify","identifiers":{"userId":"${uid}"},"traits":{"plan":"pro","visits":${k}},"messageId":"${mid}"}`
          : `{"type":"track","identifiers":{"userId":"${uid}"},"event":"Page Viewed","properties":{"path":"/pricing","plan":"pro","n":${k}},"messageId":"${mid}"}`);
      }
      return `{"data":{"sourceId":"${t.sourceId}","calls":[${parts.join(',')}]}}`;
    };
  }
  if (t.kind === 'track') {
    return () => {
      n++;
      const user = (n * 7919 + thread * 104729) % t.users;
      return `{"data":{"sourceId":"${t.sourceId}","identifiers":{"userId":"bench-u${user}"},"event":"Page Viewed",` +
        `"properties":{"path":"/pricing","plan":"pro","n":${n}},"messageId":"${t.runId}-${thread}-${n}"}}`;
    };
  }
  return () => {
    n++;
    return `{"data":{"sourceId":"${t.sourceId}","identifiers":{"anonymousId":"${t.runId}-${thread}-${n}"},` +
      `"traits":{"plan":"free","visits":${n}}}}`;
  };
}

const luaStr = (s: string) => JSON.stringify(s); // safe for the ASCII ids used here

/** Both wrk scripts: each thread numbered (`tid`, for distinct ids), POSTs with the API key. */
const LUA_THREADS = `function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  tid = tonumber(tid) or 1
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if apiKey ~= "" then wrk.headers["Authorization"] = "Bearer " .. apiKey end
end
`;

/** The wrk script: same bodies as `bodyFactory`, and a JSON summary line from done(). */
export function wrkScript(t: LoadTarget): string {
  if (t.kind === 'batch') return wrkBatchScript(t);
  const body = t.kind === 'track'
    ? `'{"data":{"sourceId":"' .. sourceId .. '","identifiers":{"userId":"bench-u' .. ((n * 7919 + tid * 104729) % users) .. '"},"event":"Page Viewed",' ..
      '"properties":{"path":"/pricing","plan":"pro","n":' .. n .. '},"messageId":"' .. runId .. '-' .. tid .. '-' .. n .. '"}}'`
    : `'{"data":{"sourceId":"' .. sourceId .. '","identifiers":{"anonymousId":"' .. runId .. '-' .. tid .. '-' .. n .. '"},' ..
      '"traits":{"plan":"free","visits":' .. n .. '}}}'`;
  return `-- generated by bench/load.ts
local sourceId = ${luaStr(t.sourceId)}
local runId = ${luaStr(t.runId)}
local users = ${Math.max(1, Math.floor(t.users))}
local path = ${luaStr(pathOf(t.kind))}
local apiKey = ${luaStr(t.apiKey ?? '')}
local threads = {}
n = 0 -- global: done() reads each thread's count with thread:get("n")

${LUA_THREADS}
codes = {}     -- global: status -> count, read by done()
sample = nil   -- global: the first non-2xx answer (status and start of the body)

function response(status, headers, body)
  codes[status] = (codes[status] or 0) + 1
  if sample == nil and (status < 200 or status > 299) then
    sample = status .. " " .. string.sub(body or "", 1, 300)
  end
end

local function jstr(x)
  return '"' .. string.gsub(x, '[%c"\\\\]', function(c) return string.format("\\\\u%04x", string.byte(c)) end) .. '"'
end

function request()
  n = n + 1
  return wrk.format(nil, path, nil, ${body})
end

function done(summary, latency, requests)
  local e = summary.errors
  local sent = 0
  local all = {}
  local first = nil
  for _, t in ipairs(threads) do
    sent = sent + (tonumber(t:get("n")) or 0)
    for k, v in pairs(t:get("codes") or {}) do all[k] = (all[k] or 0) + v end
    if first == nil then first = t:get("sample") end
  end
  local parts = {}
  for k, v in pairs(all) do table.insert(parts, '"' .. k .. '":' .. v) end
  io.write('BENCH_JSON {"codes":{' .. table.concat(parts, ",") .. '},"sample":' .. (first and jstr(first) or 'null') .. ',')
  io.write(string.format('"requests":%d,"sent":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50Us":%d,"p90Us":%d,"p99Us":%d,"meanUs":%.1f,"maxUs":%d}\\n',
    summary.requests, sent, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
`;
}

/**
 * The wrk script for batches: the body built in Lua (same as `bodyFactory`), per-call statuses
 * counted from the answers, and the requests slower than 1 s and 2 s read from wrk's histogram.
 */
function wrkBatchScript(t: LoadTarget): string {
  const b = t.batch ?? { size: 20, users: 'pool' as const };
  return `-- generated by bench/load.ts (batch)
local sourceId = ${luaStr(t.sourceId)}
local runId = ${luaStr(b.replay ? b.replay.runId : t.runId)}
local users = ${Math.max(1, Math.floor(t.users))}
local per = ${Math.max(1, Math.floor(b.size))}
local newUsers = ${b.users === 'new' ? 'true' : 'false'}
local identifyEvery = ${Math.max(0, Math.floor(b.identifyEvery ?? 0))}
local replayBatches = ${b.replay ? Math.max(1, Math.floor(b.replay.batches)) : 0}
local path = ${luaStr(pathOf('batch'))}
local apiKey = ${luaStr(t.apiKey ?? '')}
local threads = {}
n = 0          -- global: batches built by this thread (read by done())
answered = 0   -- global: answers received by this thread
codes = {}     -- global: HTTP status -> count
ccodes = {}    -- global: per-call status (data[].status of a 200 answer) -> count
sample = nil   -- global: the first failure (HTTP or per call)

${LUA_THREADS}
function response(status, headers, body)
  answered = answered + 1
  codes[status] = (codes[status] or 0) + 1
  if status < 200 or status > 299 then
    if sample == nil then sample = status .. " " .. string.sub(body or "", 1, 300) end
    return
  end
  if body == nil then return end
  for s in string.gmatch(body, '{"status":(%d+),') do
    ccodes[s] = (ccodes[s] or 0) + 1
  end
  if sample == nil then
    local at = string.find(body, '{"status":[13-9]%d%d,')
    if at then sample = "call " .. string.sub(body, at, at + 300) end
  end
end

local function jstr(x)
  return '"' .. string.gsub(x, '[%c"\\\\]', function(c) return string.format("\\\\u%04x", string.byte(c)) end) .. '"'
end

function request()
  n = n + 1
  local bn = n
  -- batch 1 of thread 1 was never sent: wrk builds one request to check the script, on thread 1's state
  if replayBatches > 0 then bn = ((n - 1) % math.max(1, replayBatches - 1)) + 2 end
  local parts = {}
  for i = 1, per do
    local k = (bn - 1) * per + i
    local mid = runId .. "-" .. tid .. "-" .. k
    local uid
    if newUsers then uid = mid else uid = "bench-u" .. ((k * 7919 + tid * 104729) % users) end
    if identifyEvery > 0 and i % identifyEvery == 0 then
      parts[i] = '{"type":"identify","identifiers":{"userId":"' .. uid .. '"},"traits":{"plan":"pro","visits":' .. k .. '},"messageId":"' .. mid .. '"}'
    else
      parts[i] = '{"type":"track","identifiers":{"userId":"' .. uid .. '"},"event":"Page Viewed","properties":{"path":"/pricing","plan":"pro","n":' .. k .. '},"messageId":"' .. mid .. '"}'
    end
  end
  return wrk.format(nil, path, nil, '{"data":{"sourceId":"' .. sourceId .. '","calls":[' .. table.concat(parts, ",") .. ']}}')
end

function done(summary, latency, requests)
  local e = summary.errors
  local sent = 0
  local all, calls, per_thread = {}, {}, {}
  local first = nil
  for _, t in ipairs(threads) do
    sent = sent + (tonumber(t:get("n")) or 0)
    table.insert(per_thread, tostring(tonumber(t:get("answered")) or 0))
    for k, v in pairs(t:get("codes") or {}) do all[k] = (all[k] or 0) + v end
    for k, v in pairs(t:get("ccodes") or {}) do calls[k] = (calls[k] or 0) + v end
    if first == nil then first = t:get("sample") end
  end
  -- latency(i): the i-th distinct recorded latency (us) and how many requests had it
  local over1, over2 = e.timeout, e.timeout
  for i = 1, #latency do
    local v, c = latency(i)
    if v > 1000000 then over1 = over1 + c end
    if v > 2000000 then over2 = over2 + c end
  end
  local parts, cparts = {}, {}
  for k, v in pairs(all) do table.insert(parts, '"' .. k .. '":' .. v) end
  for k, v in pairs(calls) do table.insert(cparts, '"' .. k .. '":' .. v) end
  io.write('BENCH_JSON {"codes":{' .. table.concat(parts, ",") .. '},"callCodes":{' .. table.concat(cparts, ",") .. '},' ..
    '"perThread":[' .. table.concat(per_thread, ",") .. '],"sample":' .. (first and jstr(first) or 'null') .. ',')
  io.write(string.format('"over1s":%d,"over2s":%d,"requests":%d,"sent":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50Us":%d,"p90Us":%d,"p99Us":%d,"meanUs":%.1f,"maxUs":%d}\\n',
    over1, over2, summary.requests, sent, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
`;
}

// ---------------------------------------------------------------- generators

let wrkPath: string | null | undefined;
export function findWrk(): string | null {
  if (wrkPath !== undefined) return wrkPath;
  const r = spawnSync('bash', ['-c', 'command -v wrk'], { encoding: 'utf8' });
  wrkPath = r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
  return wrkPath;
}

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Children of the harness that generate load; killed (by process group) on cleanup. */
export const loadgenChildren = new Set<ChildProcess>();

function parseTimes(out: string): number | undefined {
  // `times` prints the shell's and then its children's user and system times: "0m1.234s 0m0.567s".
  const lines = out.trim().split('\n').filter((l) => /^\d+m[\d.]+s \d+m[\d.]+s$/.test(l.trim()));
  const last = lines.at(-1);
  if (!last) return undefined;
  const secs = (x: string) => { const m = /^(\d+)m([\d.]+)s$/.exec(x)!; return Number(m[1]) * 60 + Number(m[2]); };
  const [u, s] = last.trim().split(' ');
  return secs(u!) + secs(s!);
}

function runShell(cmd: string, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `${cmd}; rc=$?; times; exit $rc`], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    loadgenChildren.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c) => { stdout += c; });
    child.stderr!.on('data', (c) => { stderr += c; if (stderr.length > 100_000) stderr = stderr.slice(-50_000); });
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
    child.on('error', (err) => { clearTimeout(timer); loadgenChildren.delete(child); reject(err); });
    child.on('close', (code) => { clearTimeout(timer); loadgenChildren.delete(child); resolve({ code, stdout, stderr }); });
  });
}

export async function runLoad(t: LoadTarget, s: LoadSettings, o: { tool: 'wrk' | 'autocannon'; tmpDir: string }): Promise<LoadResult> {
  const timeoutMs = (s.durationS + 60) * 1000;
  if (o.tool === 'wrk') {
    const wrk = findWrk();
    if (!wrk) throw new Error('wrk is not installed');
    const script = join(o.tmpDir, `wrk-${t.runId}.lua`);
    writeFileSync(script, wrkScript(t));
    const cmd = [wrk, '-t', String(s.threads), '-c', String(s.connections), '-d', `${s.durationS}s`, '--timeout', `${s.timeoutS}s`,
      '-s', script, t.url + pathOf(t.kind)].map(sh).join(' ');
    const r = await runShell(cmd, timeoutMs);
    const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
    if (r.code !== 0 || !line) throw new Error(`wrk failed (exit ${r.code}): ${r.stderr.slice(-500)} ${r.stdout.slice(-500)}`);
    const j = JSON.parse(line.slice('BENCH_JSON '.length));
    const socketErrors = j.connect + j.read + j.write;
    // Exact 2xx count from the script's tally; wrk's own "status" error counts only >= 400.
    const codes = (j.codes ?? {}) as Record<string, number>;
    const ok = Object.keys(codes).length ? Object.entries(codes).reduce((a, [k, v]) => (k.startsWith('2') ? a + v : a), 0) : j.requests - j.status;
    return {
      tool: 'wrk', durationS: j.durationUs / 1e6, responses: j.requests, ok, non2xx: j.requests - ok,
      statusCodes: j.codes, firstFailure: j.sample ?? undefined,
      sent: j.sent, unanswered: Math.max(0, j.sent - j.requests - socketErrors - j.timeout),
      socketErrors, timeouts: j.timeout,
      p50Ms: j.p50Us / 1000, p90Ms: j.p90Us / 1000, p99Ms: j.p99Us / 1000, meanMs: j.meanUs / 1000, maxMs: j.maxUs / 1000,
      loadgenCpuS: parseTimes(r.stdout),
      callCodes: j.callCodes, over1s: j.over1s, over2s: j.over2s, perThread: j.perThread,
    };
  }
  const childJs = fileURLToPath(new URL('./autocannon-child.js', import.meta.url));
  const spec = JSON.stringify({ target: t, settings: s });
  const r = await runShell(`${sh(process.execPath)} ${sh(childJs)} ${sh(spec)}`, timeoutMs);
  const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (r.code !== 0 || !line) throw new Error(`autocannon failed (exit ${r.code}): ${r.stderr.slice(-500)}`);
  const j = JSON.parse(line.slice('BENCH_JSON '.length)) as LoadResult;
  return { ...j, loadgenCpuS: parseTimes(r.stdout) };
}
