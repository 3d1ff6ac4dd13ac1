// Suppressed identifiers, checked on every write. Each process keeps, per org it has seen, the set
// of `kind:sha256` keys of that org's suppressions; one query per refresh interval asks whether any
// known org's `suppressions_version` moved and reloads only those. An org with no suppressions has
// an empty set: its calls pass after one Map lookup, without hashing anything. Changes made through
// this process (an erasure request, a lift) apply at once; those of other processes when they tell
// of them (pipeline/wakes.ts), or within the poll interval while nobody can tell this process.
import type pg from 'pg';
import { callError } from '../../schemas/errors.js';
import type { CallResult, IngestCall } from '../types.js';
import { hashIdentifier } from './hash.js';
import { longestRest, type Wakes } from '../wakes.js';

interface Entry { version: number; keys: Set<string> }

export interface Submitter { submit(calls: IngestCall[], o?: any): Promise<CallResult[]> }

const SUPPRESSED = callError('forbidden', 'identifier suppressed');

export class Suppressions {
  private readonly orgs = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<void>>();
  private timer?: NodeJS.Timeout;
  private refreshing?: Promise<void>;
  private closed = false;
  private readonly off: () => void;
  private readonly pollMs: number;

  /** `pollMs`: the refresh interval while `wakes` do not listen (default 1 s); while they listen, `wakes.idleMs`. */
  constructor(private readonly pool: pg.Pool, private readonly wakes: Wakes, pollMs?: number) {
    this.pollMs = pollMs ?? 1000;
    this.off = wakes.on('suppressions', () => this.tick());
    this.schedule();
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (this.closed) return;
    this.timer = setTimeout(() => this.tick(), longestRest(this.wakes, this.pollMs));
    this.timer.unref();
  }

  private tick(): void {
    this.refreshing ??= this.refresh().catch(() => {}).finally(() => { this.refreshing = undefined; this.schedule(); });
  }

  /** Reloads an org's set now (after a change made by this process). */
  async invalidate(orgId: string): Promise<void> { if (this.orgs.has(orgId)) await this.load(orgId); }

  /** For each call, whether it carries a suppressed identifier; null when none does. */
  async refused(calls: IngestCall[]): Promise<boolean[] | null> {
    let out: boolean[] | null = null;
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]!;
      let e = this.orgs.get(c.orgId);
      if (!e) { await this.ensure(c.orgId); e = this.orgs.get(c.orgId)!; }
      if (e.keys.size === 0) continue;
      const ids = c.body.identifiers as Record<string, string | undefined> | undefined;
      if (!ids) continue;
      for (const kind in ids) {
        const v = ids[kind];
        if (typeof v === 'string' && e.keys.has(`${kind}:${hashIdentifier(v)}`)) { (out ??= new Array(calls.length).fill(false))[i] = true; break; }
      }
    }
    return out;
  }

  /** A submitter that answers calls carrying a suppressed identifier 403 `forbidden` and passes the others on. */
  wrap<S extends Submitter>(inner: S): Submitter {
    return {
      submit: async (calls, o) => {
        const refused = await this.refused(calls);
        if (!refused) return inner.submit(calls, o);
        const pass = calls.filter((_, i) => !refused[i]);
        const results = pass.length ? await inner.submit(pass, o) : [];
        let k = 0;
        return calls.map((_, i) => (refused[i] ? SUPPRESSED : results[k++]!));
      },
    };
  }

  close(): void { this.closed = true; this.off(); clearTimeout(this.timer); this.orgs.clear(); }

  private ensure(orgId: string): Promise<void> {
    let p = this.loading.get(orgId);
    if (!p) {
      p = this.load(orgId).finally(() => this.loading.delete(orgId));
      this.loading.set(orgId, p);
    }
    return p;
  }

  private async load(orgId: string): Promise<void> {
    const v = await this.pool.query<{ v: string }>('SELECT suppressions_version AS v FROM orgs WHERE id = $1', [orgId]);
    const version = Number(v.rows[0]?.v ?? 0);
    const keys = new Set<string>();
    if (version > 0) {
      const r = await this.pool.query<{ kind: string; hash: string }>('SELECT kind, hash FROM suppressions WHERE org_id = $1', [orgId]);
      for (const row of r.rows) keys.add(`${row.kind}:${row.hash}`);
    }
    this.orgs.set(orgId, { version, keys });
  }

  private async refresh(): Promise<void> {
    if (this.orgs.size === 0) return;
    const r = await this.pool.query<{ id: string; v: string }>('SELECT id, suppressions_version AS v FROM orgs WHERE id = ANY($1)', [[...this.orgs.keys()]]);
    for (const row of r.rows) {
      if (Number(row.v) !== this.orgs.get(row.id)?.version) await this.load(row.id);
    }
  }
}
