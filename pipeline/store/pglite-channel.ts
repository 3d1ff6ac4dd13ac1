// The Postgres wire protocol between this thread and the PGlite host thread over the worker's
// message port instead of a Unix socket: `pg` writes to a Duplex of ours, the bytes of one
// event-loop turn travel as one transferred buffer, and the host answers with one buffer per
// request. Socket syscalls are expensive on the machines this runs on (writes into the socket were
// ~8 % of the main thread and ~12 % of the PGlite thread under ingestion load), and the protocol
// stays the same, so every query path is the one a PostgreSQL server gets.
import { Duplex } from 'node:stream';
import type { Worker } from 'node:worker_threads';

/** Messages between the channel and the host (pglite-host.ts). */
export type WireMessage =
  | { type: 'wire'; conn: number; data: Uint8Array }
  | { type: 'wire-close'; conn: number }
  | { type: 'wire-error'; conn: number; message: string };

/** Creates `pg` streams (the `stream` option of a Client or Pool) that talk to `worker`. */
export class PgliteChannel {
  private readonly conns = new Map<number, WireStream>();
  private next = 1;
  private readonly onMessage = (m: { type?: string; conn?: number; data?: Uint8Array; message?: string }) => {
    if (m.type === 'wire' && m.conn !== undefined && m.data) this.conns.get(m.conn)?.receive(m.data);
    else if (m.type === 'wire-error' && m.conn !== undefined) this.conns.get(m.conn)?.destroy(new Error(`embedded Postgres failed: ${m.message}`));
  };
  private readonly onExit = () => {
    for (const s of this.conns.values()) s.destroy(new Error('the embedded Postgres thread exited'));
  };

  constructor(private readonly worker: Worker) {
    worker.on('message', this.onMessage);
    worker.once('exit', this.onExit);
  }

  /** A new connection's stream (`pg` calls this once per connection). */
  readonly stream = (): Duplex => {
    const id = this.next++;
    const s = new WireStream(id, (m, transfer) => this.worker.postMessage(m, transfer), () => this.conns.delete(id));
    this.conns.set(id, s);
    return s;
  };

  close(): void {
    this.worker.off('message', this.onMessage);
    this.worker.off('exit', this.onExit);
    for (const s of this.conns.values()) s.destroy();
  }
}

class WireStream extends Duplex {
  private out: Buffer[] = [];
  private scheduled = false;
  private told = false;

  constructor(
    private readonly id: number,
    private readonly post: (m: WireMessage, transfer: ArrayBuffer[]) => void,
    private readonly forget: () => void,
  ) {
    super();
  }

  // The socket surface `pg` uses.
  connect(): this { process.nextTick(() => this.emit('connect')); return this; }
  setNoDelay(): this { return this; }
  setKeepAlive(): this { return this; }
  ref(): this { return this; }
  unref(): this { return this; }

  receive(data: Uint8Array): void {
    this.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.out.push(chunk);
    // `pg` writes a query as several messages in one turn: they travel together.
    if (!this.scheduled) { this.scheduled = true; queueMicrotask(() => this.flush()); }
    cb();
  }

  private flush(): void {
    this.scheduled = false;
    if (this.out.length === 0) return;
    const total = this.out.reduce((n, c) => n + c.length, 0);
    const data = new Uint8Array(total);
    let at = 0;
    for (const c of this.out) { data.set(c, at); at += c.length; }
    this.out = [];
    this.post({ type: 'wire', conn: this.id, data }, [data.buffer]);
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.flush();
    this.tellClosed();
    this.forget();
    this.push(null);
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.tellClosed();
    this.forget();
    cb(err);
  }

  /** Once, when ended or destroyed: the host rolls back what this connection left open (pglite-host.ts). */
  private tellClosed(): void {
    if (this.told) return;
    this.told = true;
    this.post({ type: 'wire-close', conn: this.id }, []);
  }
}
