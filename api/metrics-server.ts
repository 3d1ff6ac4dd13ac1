// GET /metrics on a port of its own, without a credential (HEADWATER_METRICS_PORT), for a
// Prometheus that scrapes inside a private network; every other path is 404. node:http: a scrape
// every few seconds needs no fast front end.
import { createServer, type Server } from 'node:http';
import type { Logger } from '../lib/log.js';

export interface MetricsServer { port: number; close(): Promise<void> }

export async function startMetricsServer(o: { host: string; port: number; log: Logger; text(): Promise<string>; contentType: string }): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') { res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n'); return; }
    o.text().then(
      (body) => res.writeHead(200, { 'content-type': o.contentType }).end(body),
      (err) => { o.log.warn('collecting metrics failed', { err: String(err) }); res.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed\n'); },
    );
  });
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(o.port, o.host, () => resolve()); });
  const port = (server.address() as { port: number }).port;
  o.log.info('metrics listening', { port });
  return { port, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}
