// Lanes: calls that share an identifier run in arrival order (one profile's writes never reorder);
// lanes are independent of each other.
import { identKey } from './identity.js';
import type { IngestCall } from './types.js';

/** Groups call indexes by shared identifiers (union-find), each group in arrival order. */
export function lanesOf(calls: IngestCall[]): number[][] {
  const parent = calls.map((_, i) => i);
  const find = (i: number): number => { while (parent[i] !== i) { parent[i] = parent[parent[i]!]!; i = parent[i]!; } return i; };
  const owner = new Map<string, number>();
  calls.forEach((c, i) => {
    const ids = (c.body as { identifiers: Record<string, string> }).identifiers;
    for (const k in ids) {
      const key = identKey(c.orgId, c.appId, k, ids[k]!);
      const o = owner.get(key);
      if (o === undefined) owner.set(key, i);
      else { const a = find(o), b = find(i); if (a !== b) parent[Math.max(a, b)] = Math.min(a, b); }
    }
  });
  const groups = new Map<number, number[]>();
  calls.forEach((_, i) => { const r = find(i); let g = groups.get(r); if (!g) groups.set(r, (g = [])); g.push(i); });
  return [...groups.values()];
}
