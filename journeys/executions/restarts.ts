// The restart policy: `ctx.restart()` starts a new run of the same execution, which a journey can
// turn into a loop that never waits. Each execution may restart a bounded number of times in all
// and at a bounded rate over its run time; past either the execution fails with `journey_error`
// saying which bound it hit. Restarts in quick succession are also spaced out (exponential backoff,
// capped), so a loop costs at most about one activation per second while it lasts.

export interface RestartLimits {
  /** Restarts per execution in all. */
  max: number;
  /** Restarts per minute of the execution's run time (counted from its start, at least one minute). */
  perMinute: number;
}

export const RESTART_DEFAULTS: RestartLimits = { max: 10_000, perMinute: 30 };
/** The delay before the first restart; it doubles with each further one, up to RESTART_BACKOFF_MAX_MS. */
const RESTART_BACKOFF_BASE_MS = 10;
const RESTART_BACKOFF_MAX_MS = 1000;

export type RestartDecision = { ok: true; delayMs: number } | { ok: false; message: string };

/**
 * Whether restart number `n` (1-based: the execution has restarted `n - 1` times) of an execution
 * that started at `startedAt` may happen at `now`, and after how long.
 */
export function decideRestart(n: number, startedAt: number, now: number, l: RestartLimits): RestartDecision {
  if (n > l.max) {
    return { ok: false, message: `ctx.restart() called ${n} times; an execution restarts at most ${l.max} times (HEADWATER_JOURNEY_MAX_RESTARTS)` };
  }
  const runMs = Math.max(0, now - startedAt);
  const allowed = l.perMinute * Math.max(1, runMs / 60_000);
  if (n > allowed) {
    return {
      ok: false,
      message: `ctx.restart() called ${n} times in ${(runMs / 1000).toFixed(1)} s of run time; an execution restarts at most ${l.perMinute} times per minute (HEADWATER_JOURNEY_RESTARTS_PER_MINUTE)`,
    };
  }
  return { ok: true, delayMs: Math.min(RESTART_BACKOFF_MAX_MS, RESTART_BACKOFF_BASE_MS * 2 ** Math.min(n - 1, 20)) };
}
