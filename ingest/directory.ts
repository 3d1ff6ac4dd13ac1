// Source directory for the hot path: a source's org, app and environment never change, so they are
// cached without expiry (bounded). Archive state is checked by the workers per batch, not here.
import type pg from 'pg';

export interface SourceInfo { orgId: string; appId: string; environment: 'development' | 'production' }

const MAX = 50_000;

export class SourceDirectory {
  private cache = new Map<string, SourceInfo>();
  constructor(private readonly pool: pg.Pool) {}

  /** The source's routing info, or null when it does not exist. */
  get(sourceId: string): SourceInfo | null | Promise<SourceInfo | null> {
    const hit = this.cache.get(sourceId);
    if (hit) return hit;
    return this.pool.query(
      `SELECT s.org_id, s.app_id, a.environment FROM sources s JOIN apps a ON a.id = s.app_id WHERE s.id = $1`, [sourceId],
    ).then((r) => {
      const row = r.rows[0];
      if (!row) return null;
      const info: SourceInfo = { orgId: row.org_id, appId: row.app_id, environment: row.environment };
      if (this.cache.size >= MAX) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(sourceId, info);
      return info;
    });
  }

  close() { this.cache.clear(); }
}
