// Steps of the project tool answer a result instead of throwing: a failure is one line for the user.
export type Result<T> = { ok: true; value: T } | { ok: false; error: string };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = (error: string): { ok: false; error: string } => ({ ok: false, error });

/** The message of anything thrown, on one line. */
export function oneLine(err: unknown): string {
  // Errors thrown inside a vm context are not `instanceof Error` here: read `message` directly.
  const m = (err as { message?: unknown } | null)?.message;
  const msg = typeof m === 'string' ? m : String(err);
  return msg.split('\n').map((l) => l.trim()).filter(Boolean).join(' ') || 'unknown error';
}
