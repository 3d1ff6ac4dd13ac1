// uWebSockets.js as the front end. Its builds are native and tied to Node's ABI and the libc:
// uws-pack 20.0.8 has Node 18-22 binaries; @btc-vision/uwebsockets.js 20.57 has Node 20-25 ones
// that need glibc 2.38. Each is tried in turn; the caller falls back to node:http when none loads.
import { STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uws-pack';
import type { Answer, Exchange, FrontEnd } from './front-end.js';

/** Packages tried in order. uws-pack is ESM only. The btc-vision repack is required through its
 * CommonJS entry: on Node 20, a CommonJS module that throws while loaded by import() kills the
 * process even when the import is caught (its Linux binaries need glibc 2.38 and throw on older). */
export const UWS_PACKAGES: ReadonlyArray<{ pkg: string; via: 'import' | 'require' }> = [
  { pkg: 'uws-pack', via: 'import' },
  { pkg: '@btc-vision/uwebsockets.js', via: 'require' },
];

interface UwsModule {
  App: () => TemplatedApp;
  us_listen_socket_close: (s: us_listen_socket) => void;
  us_socket_local_port: (s: us_listen_socket) => number;
}

export type UwsLoad = { ok: true; pkg: string; mod: UwsModule } | { ok: false; failures: Array<{ pkg: string; error: string }> };

/** A load error in one short line: uWS's "supports only Node.js versions ..." and the cause
 * (missing binary for this ABI, or the libc it needs). */
const shortError = (err: unknown): string => {
  const e = err as { code?: string; message?: string };
  if (e?.code === 'ERR_MODULE_NOT_FOUND' || (e?.code === 'MODULE_NOT_FOUND' && !/\.node'/.test(e.message ?? ''))) return 'not installed';
  const lines = String(e?.message ?? err).split('\n').map((l) => l.trim())
    .filter((l) => l && !l.startsWith('Require stack') && !l.startsWith('- '));
  const head = (lines[0] ?? 'load failed').replace(/ on \(glibc\).*$/, '');
  const cause = lines.length > 1 ? lines[lines.length - 1]!.replace(/^Error: /, '') : '';
  const line = cause ? `${head}: ${cause}` : head;
  return line.length > 240 ? line.slice(0, 237) + '...' : line;
};

/** Imports the first uWS build that loads on this Node and libc. */
export async function loadUws(): Promise<UwsLoad> {
  // uWS reads UWS_HTTP_MAX_HEADERS_SIZE once, when the native module loads: set it first.
  // 16 KB request heads are accepted; longer ones get uWS's own 431.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= '16384';
  const require = createRequire(import.meta.url);
  const failures: Array<{ pkg: string; error: string }> = [];
  for (const { pkg, via } of UWS_PACKAGES) {
    try {
      const mod = (via === 'import' ? await import(pkg) : require(pkg)) as Partial<UwsModule>;
      if (typeof mod.App !== 'function' || typeof mod.us_listen_socket_close !== 'function' || typeof mod.us_socket_local_port !== 'function') {
        failures.push({ pkg, error: 'does not export the uWS API' });
        continue;
      }
      // A binary can load yet fail at first use: make one app and drop it.
      mod.App().close();
      return { ok: true, pkg, mod: mod as UwsModule };
    } catch (err) {
      failures.push({ pkg, error: shortError(err) });
    }
  }
  return { ok: false, failures };
}

const EMPTY = Buffer.alloc(0);

class UwsExchange implements Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  private done = false;
  private paused = false;
  /** The body has arrived whole. */
  private bodyDone = false;
  /** `resume` ran: uWS armed its 10-s idle timeout on the socket (see onData). */
  private rearmed = false;
  private aborted?: () => void;
  private gone = false;
  private wake?: () => void;

  constructor(private readonly res: HttpResponse, private readonly req: HttpRequest) {
    this.method = req.getCaseSensitiveMethod().toUpperCase();
    this.path = req.getUrl();
    this.query = req.getQuery() ?? '';
    // uWS requires an abort handler before an asynchronous answer.
    res.onAborted(() => { this.done = true; this.gone = true; this.wake?.(); this.aborted?.(); });
  }

  header(name: string) { return this.req.getHeader(name); }
  headers() { const h: Record<string, string> = {}; this.req.forEach((k, v) => { h[k] = v; }); return h; }
  remoteAddress() { return Buffer.from(this.res.getRemoteAddressAsText()).toString('utf8'); }
  onAborted(cb: () => void) { this.aborted = cb; }
  onData(cb: (chunk: Buffer, last: boolean) => void) {
    // uWS reuses the chunk's memory after the callback: hand out a copy.
    this.res.onData((ab, isLast) => {
      if (isLast) this.bodyDone = true;
      cb(ab.byteLength ? Buffer.from(ab.slice(0)) : EMPTY, isLast);
      // uWS's resume() arms the socket's idle timeout (10 s, fixed in uWS), which nothing resets
      // until the answer is written: a handler that took longer after a paused body (an
      // authentication looked up in the store) had its connection closed with no answer. Paused
      // again, the socket has no timeout, as before the first pause; the answer resumes it.
      if (isLast && this.rearmed && !this.done && !this.paused) { this.res.pause(); this.paused = true; }
    });
  }
  pause() { if (!this.done) { this.res.pause(); this.paused = true; } }
  resume() {
    // A body already whole has nothing left to read: stay paused (see onData).
    if (this.done || this.bodyDone) return;
    this.res.resume(); this.paused = false; this.rearmed = true;
  }

  /** Resumes a paused socket and writes the status and the common headers (inside a cork). */
  private head(a: Pick<Answer, 'status' | 'requestId' | 'headers'>) {
    const res = this.res;
    // A paused socket does not flush: an answer given while the body is held back (a refused
    // credential) would never leave.
    if (this.paused) { res.resume(); this.paused = false; }
    res.writeStatus(statusLine(a.status));
    res.writeHeader('x-request-id', a.requestId);
    if (a.headers) for (const k in a.headers) res.writeHeader(k, a.headers[k]!);
  }

  respond(a: Answer) {
    if (this.done) return;
    this.done = true;
    const res = this.res;
    res.cork(() => {
      this.head(a);
      // `close` is not passed on: uWS itself stops reading a body whose answer went out early.
      if (a.body === undefined) { res.endWithoutBody(a.headLength ?? 0); return; }
      res.writeHeader('content-type', a.contentType ?? 'application/octet-stream');
      res.end(a.body);
    });
  }
  async stream(a: Omit<Answer, 'body' | 'headLength' | 'close'>, chunks: AsyncIterable<string | Uint8Array>): Promise<void> {
    if (this.done) return;
    this.done = true;
    const res = this.res;
    res.cork(() => {
      this.head(a);
      res.writeHeader('content-type', a.contentType ?? 'application/octet-stream');
    });
    try {
      for await (const chunk of chunks) {
        if (this.gone) return;
        let ok = true;
        res.cork(() => { ok = res.write(chunk); });
        // uWS keeps what the socket did not take; the next chunk waits until it drained.
        if (!ok && !this.gone) {
          await new Promise<void>((resolve) => {
            this.wake = resolve;
            res.onWritable(() => { this.wake = undefined; resolve(); return true; });
          });
        }
      }
      if (!this.gone) res.cork(() => res.end());
    } catch (err) {
      if (!this.gone) { this.gone = true; res.close(); }
      throw err;
    }
  }
}

const STATUS_LINE = new Map<number, string>();
const statusLine = (s: number) => {
  let l = STATUS_LINE.get(s);
  if (!l) { l = `${s} ${STATUS_CODES[s] ?? 'Unknown'}`; STATUS_LINE.set(s, l); }
  return l;
};

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT listen option. */
const LISTEN_EXCLUSIVE_PORT = 1;

export function uwsFrontEnd(mod: UwsModule): FrontEnd {
  const app = mod.App();
  let listenSocket: us_listen_socket | null = null;
  return {
    name: 'uws',
    listen(host, port, handle) {
      app.any('/*', (res, req) => handle(new UwsExchange(res, req)));
      return new Promise((resolve, reject) => {
        // An exclusive port (no SO_REUSEPORT): uWS otherwise shares a port another process listens on,
        // and two servers would silently split its connections.
        const listen = app.listen as unknown as (h: string, p: number, opts: number, cb: (s: us_listen_socket | false) => void) => void;
        listen.call(app, host, port, LISTEN_EXCLUSIVE_PORT, (sock) => {
          if (!sock) { reject(Object.assign(new Error(`cannot listen on ${host}:${port}`), { code: 'EADDRINUSE' })); return; }
          listenSocket = sock;
          resolve(mod.us_socket_local_port(sock));
        });
      });
    },
    stopListening() { if (listenSocket) { mod.us_listen_socket_close(listenSocket); listenSocket = null; } },
    close() { app.close(); },
  };
}
