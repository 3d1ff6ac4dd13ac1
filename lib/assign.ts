// Stable assignment for holdouts and splits (docs/authoring.md, "Controls"): a point in [0, 1) from
// a hash of the parts, the same in every process and on every replay. sdk/testing.ts carries a copy
// (the SDK imports nothing); test/controls-split.test.ts checks the two agree.

/** A point in [0, 1) for these parts: FNV-1a over the UTF-16 units, then the murmur3 finalizer. */
export function assignPoint(...parts: string[]): number {
  let h = 0x811c9dc5;
  const s = parts.join('\u0000');
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

/** The weight key a point falls on: keys in sorted order, each taking its share of the total. */
export function pickWeighted(point: number, weights: Record<string, number>): string {
  const keys = Object.keys(weights).sort();
  const total = keys.reduce((n, k) => n + weights[k]!, 0);
  let acc = 0;
  for (const k of keys) {
    acc += weights[k]! / total;
    if (point < acc && weights[k]! > 0) return k;
  }
  return [...keys].reverse().find((k) => weights[k]! > 0)!;
}

/** Whether a profile is in a journey's holdout of `percent` (0-50). */
export const inHoldout = (journeyKey: string, profileId: string, percent: number) =>
  percent > 0 && assignPoint('holdout', journeyKey, profileId) * 100 < percent;

/** The variant `ctx.split(name, weights)` gives this profile in this journey. */
export const splitVariant = (journeyKey: string, name: string, profileId: string, weights: Record<string, number>) =>
  pickWeighted(assignPoint('split', journeyKey, name, profileId), weights);
