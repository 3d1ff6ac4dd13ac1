// A request body read chunk by chunk (routes with `streamBody`, e.g. artifact uploads), so a large
// body is never held whole. The front end pushes the chunks it receives; the handler iterates.
// Backpressure: past HIGH_WATER bytes queued the front end is asked to pause the socket, and to
// resume once the handler has taken the queue below LOW_WATER.

/** What a handler sees: the body's chunks in order. Iteration throws if the body fails (too large,
 * client gone). Front ends other than uWS can hand over any async iterable of bytes (a Readable). */
export type BodyStream = AsyncIterable<Uint8Array>;

export interface FlowControl { pause(): void; resume(): void }

const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

export class BodyQueue implements BodyStream {
  private readonly chunks: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private failure: unknown = null;
  private closed = false;
  private paused = false;
  private wake: (() => void) | null = null;

  constructor(private readonly flow: FlowControl) {}

  /** A chunk from the socket (the caller copies memory it will reuse). */
  push(chunk: Uint8Array, isLast: boolean): void {
    if (this.closed || this.ended || this.failure) return;
    if (chunk.byteLength > 0) { this.chunks.push(chunk); this.queued += chunk.byteLength; }
    if (isLast) this.ended = true;
    else if (this.queued > HIGH_WATER && !this.paused) { this.paused = true; this.flow.pause(); }
    this.notify();
  }

  /** The body cannot complete (limit exceeded, client gone): the reader's next step throws `err`. */
  fail(err: unknown): void {
    if (this.ended && this.chunks.length === 0) return;
    if (!this.failure) this.failure = err;
    this.chunks.length = 0;
    this.queued = 0;
    this.notify();
  }

  /** The handler is done with the body (answered early): drop what is queued and what comes. */
  close(): void {
    this.closed = true;
    this.chunks.length = 0;
    this.queued = 0;
    // Let the rest of the body flow (and be dropped) so the socket is not left paused.
    if (this.paused) { this.paused = false; this.flow.resume(); }
    this.notify();
  }

  private notify() { const w = this.wake; this.wake = null; w?.(); }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    try {
      for (;;) {
        if (this.failure) throw this.failure;
        const c = this.chunks.shift();
        if (c !== undefined) {
          this.queued -= c.byteLength;
          if (this.paused && this.queued < LOW_WATER) { this.paused = false; this.flow.resume(); }
          yield c;
          continue;
        }
        if (this.ended || this.closed) return;
        await new Promise<void>((r) => { this.wake = r; });
      }
    } finally {
      // A reader that stops early (break, throw) takes no more chunks.
      if (!this.ended) this.close();
    }
  }
}
