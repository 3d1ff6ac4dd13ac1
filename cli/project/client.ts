// The HTTP calls of the project tool. Each answers a result whose error is one line for the user.
import type { ManifestInput, Push } from '../../schemas/mod.js';
import { fail, ok, oneLine, type Result } from './result.js';

const REQUEST_TIMEOUT_MS = 60_000;

export interface Me { orgId: string; scheme: string }

export interface Client {
  me(): Promise<Result<Me>>;
  /** True when the org already stores the artifact. */
  has(digest: string): Promise<Result<boolean>>;
  put(digest: string, kind: 'bundle' | 'source', bytes: Buffer): Promise<Result<void>>;
  createPush(body: { manifest: ManifestInput; appId: string; orgId: string }): Promise<Result<Push>>;
  getPush(id: string): Promise<Result<Push>>;
}

export function createClient(baseUrl: string, token: string, tokenFrom = '--token'): Client {
  const base = baseUrl.replace(/\/+$/, '');
  const send = async (method: string, path: string, body?: BodyInit, type?: string): Promise<Result<Response>> => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (type) headers['content-type'] = type;
    try {
      return ok(await fetch(base + path, { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }));
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return fail(`cannot reach the service at ${base}: ${cause?.code ?? cause?.message ?? oneLine(err)} (is headwater serve running there? set --url or HEADWATER_URL)`);
    }
  };
  const refusal = async (res: Response, what: string): Promise<string> => {
    let detail = `HTTP ${res.status}`;
    try {
      const b = (await res.json()) as { error?: { code?: string; message?: string } };
      if (b?.error?.code) detail = `${res.status} ${b.error.code}: ${b.error.message ?? ''}`.trim();
    } catch { /* not an envelope */ }
    if (res.status === 401) return `the service refused the credential taken from ${tokenFrom} (${detail}): push needs an org session token or the org's pipeline key (--token or HEADWATER_TOKEN)`;
    return `${what} failed: ${detail}`;
  };
  return {
    async me() {
      const r = await send('GET', '/v1/users/me');
      if (!r.ok) return r;
      if (!r.value.ok) return fail(await refusal(r.value, 'GET /v1/users/me'));
      const b = (await r.value.json()) as { data: Me };
      return ok(b.data);
    },
    async has(digest) {
      const r = await send('HEAD', `/v1/artifacts/${digest}`);
      if (!r.ok) return r;
      if (r.value.status === 200) return ok(true);
      if (r.value.status === 404) return ok(false);
      return fail(await refusal(r.value, `HEAD /v1/artifacts/${digest}`));
    },
    async put(digest, kind, bytes) {
      const r = await send('PUT', `/v1/artifacts/${digest}?kind=${kind}`, new Uint8Array(bytes), 'application/octet-stream');
      if (!r.ok) return r;
      if (r.value.status === 200 || r.value.status === 201) { await r.value.arrayBuffer(); return ok(undefined); }
      return fail(await refusal(r.value, `uploading ${kind} ${digest.slice(0, 12)}`));
    },
    async createPush(body) {
      const r = await send('POST', '/v1/pushes', JSON.stringify({ data: body }), 'application/json');
      if (!r.ok) return r;
      if (r.value.status !== 201) return fail(await refusal(r.value, 'POST /v1/pushes'));
      return ok(((await r.value.json()) as { data: Push }).data);
    },
    async getPush(id) {
      const r = await send('GET', `/v1/pushes/${encodeURIComponent(id)}`);
      if (!r.ok) return r;
      if (r.value.status !== 200) return fail(await refusal(r.value, `GET /v1/pushes/${id}`));
      return ok(((await r.value.json()) as { data: Push }).data);
    },
  };
}
