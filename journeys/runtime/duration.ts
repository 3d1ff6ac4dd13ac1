// Journey durations: '500ms' '2s' '5m' '1h' '3d' or a non-negative integer of milliseconds, at most
// ten years (what a timer deadline column and the journal schema accept).

export const MAX_DURATION_MS = 315_360_000_000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d{1,15})(ms|s|m|h|d)$/;

/** Milliseconds of a duration, or null when it is not one (or exceeds ten years). */
export function durationMs(value: unknown): number | null {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) return null;
    ms = value;
  } else if (typeof value === 'string') {
    const m = PATTERN.exec(value);
    if (!m) return null;
    ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  } else return null;
  return ms <= MAX_DURATION_MS ? ms : null;
}
