// A request body read chunk by chunk (routes with `streamBody`, e.g. artifact uploads), so a large
// body is never held whole. The front end pushes the chunks it receives; the handler iterates.
//
// Memory stays bounded by HIGH_WATER whatever the socket does: past it the front end is asked to
// pause the socket, and what still arrives goes to a spill file (unlinked at once, so nothing
// outlives the process) that the reader drains in order. The spill matters: uWS (uws-pack 20.0.8)
// honours only the first pause() of a request; after a resume() later pauses let the body through.

import { closeSync, openSync, read, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** What a handler sees: the body's chunks in order. Iteration throws if the body fails (too large,
 * client gone). Front ends other than uWS can hand over any async iterable of bytes (a Readable). */
export type BodyStream = AsyncIterable<Uint8Array>;

export interface FlowControl { pause(): void; resume(): void }

const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
const SPILL_READ = 256 * 1024;

const readAt = (fd: number, buf: Buffer, pos: number) =>
  new Promise<number>((resolve, reject) => read(fd, buf, 0, buf.length, pos, (err, n) => (err ? reject(err) : resolve(n))));

export class BodyQueue implements BodyStream {
  private readonly chunks: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private failure: unknown = null;
  private closed = false;
  private paused = false;
  private wake: (() => void) | null = null;
  // The spill file: [readPos, writePos) holds chunks newer than everything in `chunks`.
  private fd = -1;
  private writePos = 0;
  private readPos = 0;

  /** `spillDir`: where the spill file goes (a directory of the service's own). */
  constructor(private readonly flow: FlowControl, private readonly spillDir: string) {}

  /** Bytes held in memory (tests, diagnostics). */
  get buffered(): number { return this.queued; }

  /** A chunk from the socket (the caller copies memory it will reuse). */
  push(chunk: Uint8Array, isLast: boolean): void {
    if (this.closed || this.ended || this.failure) return;
    if (chunk.byteLength > 0) {
      if (this.fd !== -1 || this.queued + chunk.byteLength > HIGH_WATER) this.spill(chunk);
      else { this.chunks.push(chunk); this.queued += chunk.byteLength; }
    }
    if (isLast) this.ended = true;
    else if (this.fd !== -1 && !this.paused) { this.paused = true; this.flow.pause(); }
    this.notify();
  }

  private spill(chunk: Uint8Array) {
    if (this.fd === -1) {
      const path = join(this.spillDir, `body-${randomBytes(8).toString('hex')}`);
      this.fd = openSync(path, 'w+', 0o600);
      unlinkSync(path);
      this.writePos = 0;
      this.readPos = 0;
    }
    let off = 0;
    while (off < chunk.byteLength) off += writeSync(this.fd, chunk, off, chunk.byteLength - off, this.writePos + off);
    this.writePos += chunk.byteLength;
  }

  private dropSpill() {
    if (this.fd !== -1) { try { closeSync(this.fd); } catch { /* already closed */ } this.fd = -1; }
  }

  /** The body cannot complete (limit exceeded, client gone): the reader's next step throws `err`. */
  fail(err: unknown): void {
    if (this.ended && this.chunks.length === 0 && this.fd === -1) return;
    if (!this.failure) this.failure = err;
    this.chunks.length = 0;
    this.queued = 0;
    this.dropSpill();
    this.notify();
  }

  /** The handler is done with the body (answered early): drop what is queued and what comes. */
  close(): void {
    this.closed = true;
    this.chunks.length = 0;
    this.queued = 0;
    this.dropSpill();
    // Let the rest of the body flow (and be dropped) so the socket is not left paused.
    if (this.paused) { this.paused = false; this.flow.resume(); }
    this.notify();
  }

  private notify() { const w = this.wake; this.wake = null; w?.(); }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    try {
      for (;;) {
        if (this.failure) throw this.failure;
        if (this.closed) return;
        const c = this.chunks.shift();
        if (c !== undefined) {
          this.queued -= c.byteLength;
          if (this.paused && this.queued < LOW_WATER && this.fd === -1) { this.paused = false; this.flow.resume(); }
          yield c;
          continue;
        }
        if (this.fd !== -1 && this.readPos < this.writePos) {
          const fd = this.fd;
          const buf = Buffer.allocUnsafe(Math.min(SPILL_READ, this.writePos - this.readPos));
          let n: number;
          try { n = await readAt(fd, buf, this.readPos); } catch (err) {
            if (this.failure) throw this.failure;
            if (this.closed) return;
            throw err;
          }
          if (this.failure) throw this.failure;
          if (this.closed || fd !== this.fd) return;
          this.readPos += n;
          // Drained: new chunks go to memory again.
          if (this.readPos >= this.writePos) this.dropSpill();
          yield n === buf.length ? buf : buf.subarray(0, n);
          continue;
        }
        if (this.paused && this.fd === -1) { this.paused = false; this.flow.resume(); }
        if (this.ended) return;
        await new Promise<void>((r) => { this.wake = r; });
      }
    } finally {
      // A reader that stops early (break, throw) takes no more chunks.
      if (!this.ended || this.fd !== -1 || this.chunks.length) this.close();
    }
  }
}
