// Replay order of promoted values. The pipeline may apply the calls of one batch concurrently, so
// two held trait values of one profile sent together could land in either order. Trait values
// (last write wins) are therefore split into waves replayed one after another; event writes carry
// their own timestamps, so held events go in one wave.
import type { IngestCall } from '../types.js';
import type { CatalogKind } from './types.js';

/**
 * Indexes of `calls` (in arrival order) grouped into waves. Identifier values that appear together
 * in a held call are taken as one person (union-find), and each trait call goes one wave after the
 * latest earlier call of its person, so one person's values apply in arrival order. Profiles
 * merged only by calls that were not held are not known here and may share a wave.
 */
export function replayWaves(kind: CatalogKind, calls: IngestCall[]): number[][] {
  if (calls.length === 0) return [];
  if (kind === 'event') return [calls.map((_, i) => i)];
  const parent = new Map<string, string>();
  const find = (k: string): string => {
    let r = k;
    for (let p = parent.get(r); p !== undefined && p !== r; p = parent.get(r)) r = p;
    for (let x = k; x !== r;) { const p = parent.get(x)!; parent.set(x, r); x = p; }
    return r;
  };
  const lastWave = new Map<string, number>();
  const waves: number[][] = [];
  for (let i = 0; i < calls.length; i++) {
    const ids = calls[i]!.body.identifiers as Record<string, string | undefined>;
    const roots: string[] = [];
    for (const k in ids) {
      const key = `${k}\u0000${ids[k]}`;
      if (!parent.has(key)) parent.set(key, key);
      roots.push(find(key));
    }
    let w = 0;
    for (const r of roots) { const last = lastWave.get(r); if (last !== undefined && last >= w) w = last + 1; }
    for (const r of roots) parent.set(r, roots[0]!);
    if (roots.length > 0) lastWave.set(roots[0]!, w);
    (waves[w] ??= []).push(i);
  }
  return waves;
}
