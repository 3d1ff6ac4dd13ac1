// What a process opened, closed in reverse order at its stop. A part still closing after
// `slowSeconds` is named in the log, so that a stop overrunning its deadline (cli/main.ts) says
// what it waited for; a part that fails to close is logged and the others still close.
// `notClosed()` lists the part being closed first, then those still waiting their turn: the
// deadline's log line carries it, because with one dependency frozen the part that stalls first is
// whichever closes first among those that use it.
import type { Logger } from './log.js';

export class Closers {
  private readonly parts: Array<[string, () => Promise<void> | void]> = [];
  /** Index of the part being closed; parts below it have not had their turn yet. */
  private current = -1;

  constructor(private readonly log: Logger, private readonly slowSeconds: number) {}

  add(part: string, close: () => Promise<void> | void): void { this.parts.push([part, close]); }

  async closeAll(): Promise<void> {
    const { log, slowSeconds } = this;
    for (let i = this.parts.length - 1; i >= 0; i--) {
      this.current = i;
      const [part, close] = this.parts[i]!;
      const slow = setTimeout(() => log.warn('still closing', { part, afterSeconds: slowSeconds }), slowSeconds * 1000);
      await Promise.resolve().then(close).catch((err) => log.warn('close failed', { part, err })).finally(() => clearTimeout(slow));
    }
    this.parts.length = 0;
    this.current = -1;
  }

  /** The part closing now, then the parts after it in closing order; empty before and after a stop. */
  notClosed(): string[] {
    const out: string[] = [];
    for (let i = this.current; i >= 0; i--) out.push(this.parts[i]![0]);
    return out;
  }
}

/** Half the stop deadline, at most 10 s: when a part still closing is worth naming. */
export const slowCloseSeconds = (shutdownSeconds: number) => Math.min(10, shutdownSeconds / 2);
