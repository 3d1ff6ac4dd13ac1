// What a process opened, closed in reverse order at its stop. A part still closing after
// `slowSeconds` is named in the log, so that a stop overrunning its deadline (cli/main.ts) says
// what it waited for; a part that fails to close is logged and the others still close.
import type { Logger } from './log.js';

export class Closers {
  private readonly parts: Array<[string, () => Promise<void> | void]> = [];

  constructor(private readonly log: Logger, private readonly slowSeconds: number) {}

  add(part: string, close: () => Promise<void> | void): void { this.parts.push([part, close]); }

  async closeAll(): Promise<void> {
    const { log, slowSeconds } = this;
    for (let i = this.parts.length - 1; i >= 0; i--) {
      const [part, close] = this.parts[i]!;
      const slow = setTimeout(() => log.warn('still closing', { part, afterSeconds: slowSeconds }), slowSeconds * 1000);
      await Promise.resolve().then(close).catch((err) => log.warn('close failed', { part, err })).finally(() => clearTimeout(slow));
    }
    this.parts.length = 0;
  }
}

/** Half the stop deadline, at most 10 s: when a part still closing is worth naming. */
export const slowCloseSeconds = (shutdownSeconds: number) => Math.min(10, shutdownSeconds / 2);
