// The ceiling of the benchmark: a bare uWebSockets.js (uws-pack) server that reads a POST body,
// parses it as JSON, and answers 201 with a small JSON. No auth, no validation, no storage: what
// the front end alone can do on this machine. Started by bench/run.ts as its own process.
//
//   node dist/bench/raw-uws.js [--port P] [--host H]     (prints "listening on http://H:P")
import { App, us_listen_socket_close, us_socket_local_port, type HttpResponse, type us_listen_socket, type us_socket } from 'uws-pack';
import { arg } from './args.js';

const host = arg('--host', '127.0.0.1');
const port = Number(arg('--port', '0'));
let seq = 0;

function answer(res: HttpResponse, status: string, body: string) {
  res.cork(() => { res.writeStatus(status).writeHeader('content-type', 'application/json').end(body); });
}

function onPost(res: HttpResponse) {
  let aborted = false;
  let parts: Buffer[] | undefined;
  res.onAborted(() => { aborted = true; });
  res.onData((chunk, isLast) => {
    // uWS reuses the chunk's memory after this callback: copy it.
    const piece = Buffer.from(chunk.slice(0));
    if (!isLast) { (parts ??= []).push(piece); return; }
    if (aborted) return;
    const buf = parts ? Buffer.concat([...parts, piece]) : piece;
    let body: any;
    try { body = JSON.parse(buf.toString('utf8')); } catch {
      answer(res, '400 Bad Request', '{"error":{"code":"invalid_json","message":"body is not JSON"}}');
      return;
    }
    const messageId = typeof body?.data?.messageId === 'string' ? body.data.messageId : null;
    answer(res, '201 Created', JSON.stringify({ data: { id: `evt_${(++seq).toString(36)}`, messageId } }));
  });
}

let listenSocket: us_listen_socket | undefined;
App()
  .post('/*', onPost)
  .get('/health/live', (res) => { answer(res, '200 OK', '{"data":{"status":"ok"}}'); })
  .any('/*', (res) => { answer(res, '404 Not Found', '{"error":{"code":"not_found","message":"no route"}}'); })
  .listen(host, port, (token) => {
    if (!token) { process.stderr.write(`raw-uws: cannot listen on ${host}:${port}\n`); process.exit(1); }
    listenSocket = token;
    process.stdout.write(`listening on http://${host}:${us_socket_local_port(token as unknown as us_socket)}\n`);
  });

const stop = () => {
  if (listenSocket) us_listen_socket_close(listenSocket);
  listenSocket = undefined;
  // Open keep-alive sockets would keep the loop alive; nothing is pending, so leave now.
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
