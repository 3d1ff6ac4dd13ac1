// A local webhook receiver (node:http on 127.0.0.1) that records every request and verifies its
// signature with the independent `standardwebhooks` package, once it knows the secret.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Hit {
  id: string;
  timestamp: string;
  signature: string;
  /** The Authorization header ('' when none): Basic for URLs with user:pass@. */
  authorization: string;
  body: string;
  json: any;
  /** Verified by standardwebhooks with the receiver's secret (false without one). */
  verified: boolean;
  at: number;
  path: string;
}

/** What to answer to the n-th hit (0-based): a status with headers, or 'hang' (never answer). */
export type Respond = (hit: Hit, n: number) => { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

export interface Receiver {
  url: string;
  port: number;
  hits: Hit[];
  secret?: string;
  respond: Respond;
  /** Hits per webhook-id. */
  counts(): Map<string, number>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Respond = () => ({ status: 200 }), port = 0): Promise<Receiver> {
  const hanging = new Set<ServerResponse>();
  const r: Receiver = {
    url: '', port: 0, hits: [], respond,
    counts() {
      const m = new Map<string, number>();
      for (const h of r.hits) m.set(h.id, (m.get(h.id) ?? 0) + 1);
      return m;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const h = (k: string) => String(req.headers[k] ?? '');
      let verified = false;
      if (r.secret) {
        try { new Webhook(r.secret).verify(body, { 'webhook-id': h('webhook-id'), 'webhook-timestamp': h('webhook-timestamp'), 'webhook-signature': h('webhook-signature') }); verified = true; } catch { verified = false; }
      }
      let json: any;
      try { json = JSON.parse(body); } catch { json = undefined; }
      const hit: Hit = { id: h('webhook-id'), timestamp: h('webhook-timestamp'), signature: h('webhook-signature'), authorization: h('authorization'), body, json, verified, at: Date.now(), path: req.url ?? '' };
      r.hits.push(hit);
      const a = r.respond(hit, r.hits.length - 1);
      if (a === 'hang') { hanging.add(res); return; }
      const answer = () => { res.writeHead(a.status, a.headers ?? {}); res.end('ok'); };
      if (a.delayMs) setTimeout(answer, a.delayMs); else answer();
    });
  });
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', () => done()));
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}`;
  return r;
}

/** A local port that nothing listens on (listened once, then closed). */
export async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((done) => s.listen(0, '127.0.0.1', () => done()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((done) => s.close(() => done()));
  return port;
}
