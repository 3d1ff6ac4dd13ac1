// The reads of the authoring commands (journals for the replay check, the tracking plan for types).
// Each answers a result whose error is one line for the user.
import type { JournalCall, JournalEntry } from '../../schemas/mod.js';
import { fail, ok, oneLine, type Result } from '../project/result.js';

const REQUEST_TIMEOUT_MS = 60_000;

export interface Journals {
  key: string; enabled: boolean; bundle: string | null; active: number;
  executions: Array<{
    id: string; runId: string; releaseId: string; versionId: string; bundle: string | null; status: string;
    event: Record<string, unknown>; journal: JournalEntry[]; pending: { call: JournalCall; at: number } | null;
  }>;
}
export interface CatalogEvent { name: string; properties: Record<string, string>; state: string }
export interface CatalogTrait { name: string; type: string; state: string }

export interface AuthoringApi {
  /** Null when the org has no journey of that key. */
  journals(key: string, limit: number): Promise<Result<Journals | null>>;
  events(): Promise<Result<CatalogEvent[]>>;
  traits(): Promise<Result<CatalogTrait[]>>;
}

type Envelope<T> = { data: T; meta?: { hasMore?: boolean; nextCursor?: string } };

export function createAuthoringApi(baseUrl: string, token: string): AuthoringApi {
  const base = baseUrl.replace(/\/+$/, '');
  /** The envelope of a GET; null for a 404 when `orNull`. */
  const get = async <T>(path: string, orNull = false): Promise<Result<Envelope<T> | null>> => {
    const what = `GET ${path.split('?')[0]}`;
    let res: Response;
    try {
      res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return fail(`cannot reach the service at ${base}: ${cause?.code ?? cause?.message ?? oneLine(err)}`);
    }
    if (res.status === 404 && orNull) { await res.arrayBuffer(); return ok(null); }
    let body: (Partial<Envelope<T>> & { error?: { code?: string; message?: string } }) | undefined;
    try { body = await res.json() as typeof body; } catch { /* not JSON */ }
    if (!res.ok) {
      const detail = body?.error?.code ? `${res.status} ${body.error.code}: ${body.error.message ?? ''}`.trim() : `HTTP ${res.status}`;
      if (res.status === 401) return fail(`the service refused the credential (${detail}); pass a session token or the pipeline key with --token or HEADWATER_TOKEN`);
      return fail(`${what} failed: ${detail}`);
    }
    if (body?.data === undefined) return fail(`${what} answered no data`);
    return ok(body as Envelope<T>);
  };
  const all = async <T>(path: string): Promise<Result<T[]>> => {
    const out: T[] = [];
    let cursor = '';
    for (;;) {
      const r = await get<T[]>(`${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      if (!r.ok) return r;
      out.push(...r.value!.data);
      const meta = r.value!.meta;
      if (!meta?.hasMore || !meta.nextCursor) return ok(out);
      cursor = meta.nextCursor;
    }
  };
  return {
    async journals(key, limit) {
      const r = await get<Journals>(`/v1/journeys/${encodeURIComponent(key)}/journals?limit=${limit}`, true);
      return r.ok ? ok(r.value ? r.value.data : null) : r;
    },
    events: () => all<CatalogEvent>('/v1/catalog/events'),
    traits: () => all<CatalogTrait>('/v1/catalog/traits'),
  };
}
