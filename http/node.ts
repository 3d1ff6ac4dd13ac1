// node:http as the front end, for Node releases or libcs no uWS build loads on. Same behaviour
// as uws.ts: 16 KB request heads (longer ones get node's bare 431 and the connection closes),
// bodies streamed to the core chunk by chunk, keep-alive, graceful close.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Answer, Exchange, FrontEnd } from './front-end.js';

const MAX_HEADER_SIZE = 16 * 1024;
/** Idle keep-alive connections live as long as uWS lets them (10 s). */
const KEEP_ALIVE_MS = 10_000;
const EMPTY = Buffer.alloc(0);

class NodeExchange implements Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  private done = false;
  private aborted?: () => void;

  constructor(private readonly req: IncomingMessage, private readonly res: ServerResponse) {
    this.method = (req.method ?? 'GET').toUpperCase();
    let url = req.url ?? '/';
    // An absolute-form target (`GET http://host/path`) is routed by its path.
    if (url[0] !== '/') { try { const u = new URL(url); url = u.pathname + u.search; } catch { url = '/'; } }
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.query = q === -1 ? '' : url.slice(q + 1);
    req.on('error', () => {}); // a client reset mid-body: 'close' below says so
    res.on('close', () => { if (!res.writableFinished && !this.done) { this.done = true; this.aborted?.(); } });
  }

  header(name: string) {
    const v = this.req.headers[name];
    return v === undefined ? '' : Array.isArray(v) ? v.join(', ') : v;
  }
  headers() {
    const h: Record<string, string> = {};
    for (const k in this.req.headers) h[k] = this.header(k);
    return h;
  }
  remoteAddress() { return this.req.socket.remoteAddress ?? ''; }
  onAborted(cb: () => void) { this.aborted = cb; }
  onData(cb: (chunk: Buffer, last: boolean) => void) {
    this.req.on('data', (c: Buffer) => cb(c, false));
    this.req.on('end', () => cb(EMPTY, true));
  }
  pause() { this.req.pause(); }
  resume() { this.req.resume(); }

  /** Sets the status and the common headers. */
  private head(a: Pick<Answer, 'status' | 'requestId' | 'headers'>) {
    this.res.statusCode = a.status;
    this.res.setHeader('x-request-id', a.requestId);
    if (a.headers) for (const k in a.headers) this.res.setHeader(k, a.headers[k]!);
  }

  respond(a: Answer) {
    if (this.done) return;
    this.done = true;
    const res = this.res;
    this.head(a);
    if (a.close) res.setHeader('connection', 'close');
    if (a.body === undefined) {
      res.setHeader('content-length', a.headLength ?? 0);
      res.end();
      return;
    }
    res.setHeader('content-type', a.contentType ?? 'application/octet-stream');
    res.setHeader('content-length', typeof a.body === 'string' ? Buffer.byteLength(a.body) : a.body.byteLength);
    res.end(a.body); // node itself writes no body in answer to HEAD
  }

  async stream(a: Omit<Answer, 'body' | 'headLength' | 'close'>, chunks: AsyncIterable<string | Uint8Array>): Promise<void> {
    if (this.done) return;
    this.done = true;
    const res = this.res;
    this.head(a);
    res.setHeader('content-type', a.contentType ?? 'application/octet-stream');
    try {
      for await (const chunk of chunks) {
        if (res.destroyed) return;
        // The next chunk waits until the socket took this one (or the client left).
        if (!res.write(chunk)) {
          await new Promise<void>((resolve) => {
            const go = () => { res.off('drain', go); res.off('close', go); resolve(); };
            res.on('drain', go);
            res.on('close', go);
          });
        }
      }
      if (!res.destroyed) res.end();
    } catch (err) {
      res.destroy();
      throw err;
    }
  }
}

export function nodeFrontEnd(): FrontEnd {
  const server = createServer({ maxHeaderSize: MAX_HEADER_SIZE, keepAliveTimeout: KEEP_ALIVE_MS, noDelay: true });
  return {
    name: 'node:http',
    listen(host, port, handle) {
      server.on('request', (req: IncomingMessage, res: ServerResponse) => handle(new NodeExchange(req, res)));
      // Heads over the limit and unparseable requests: node answers 431 / 400 and closes.
      server.on('clientError', (err: NodeJS.ErrnoException & { code?: string }, socket: Socket) => {
        if (!socket.writable) { socket.destroy(); return; }
        const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large'
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
        socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      });
      return new Promise((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException) => reject(Object.assign(new Error(`cannot listen on ${host}:${port}: ${err.code ?? err.message}`), { code: err.code }));
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          const addr = server.address();
          resolve(typeof addr === 'object' && addr ? addr.port : port);
        });
      });
    },
    // http.Server#close would also drop idle keep-alive connections, on which a request may be in
    // transit: like uWS, only the listening socket closes here, and requests still arriving on open
    // connections get the core's 503 until close() ends them. The close waits one poll phase so
    // connections the kernel already completed are accepted (and answered) rather than reset.
    stopListening() { setImmediate(() => { if (server.listening) NetServer.prototype.close.call(server); }); },
    close() { server.closeAllConnections(); server.close(); },
  };
}
