// An answer that takes longer than uWS's idle timeout (10 s, fixed in uWS) still reaches the client.
// The body of a request whose credential is looked up asynchronously is paused during the lookup;
// uWS's resume() arms that timeout, and nothing reset it until the answer was written: such a request
// (a segment change that fills history on a large org, held ~11 s) had its connection closed with
// an empty reply. Each front end (uWS where a build loads, node:http), a credential known at once or
// looked up, with a body; all held at once.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpServer, type HttpServer, type Principal } from '../http/server.js';
import { loadUws, uwsFrontEnd } from '../http/uws.js';
import { nodeFrontEnd } from '../http/node.js';
import type { FrontEnd } from '../http/front-end.js';
import { createLogger } from '../lib/log.js';

// Past uWS's timeout and its 4-s sweep, so a socket timed out is closed before the answer.
const HOLD_MS = 14_500;
const dir = mkdtempSync(join(tmpdir(), 'hw-long-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const PRINCIPAL: Principal = { scheme: 'apiKey', orgId: 'org_long', role: null, userId: null };

async function serve(frontEnd: FrontEnd, lookup: boolean): Promise<{ server: HttpServer; url: string }> {
  const server = createHttpServer({
    frontEnd, log: createLogger('error'), bodyLimit: 1 << 20, maxDepth: 32, spillDir: dir,
    // A credential looked up (a Promise) pauses the body until it is known. It resolves later, as a
    // store lookup does: resolved at once, the body is not yet read and the old code passed too.
    authenticate: () => (lookup ? new Promise<Principal>((r) => setTimeout(() => r(PRINCIPAL), 20)) : PRINCIPAL),
  });
  server.add({
    method: 'POST', path: '/v1/slow', auth: ['apiKey'],
    handler: async (req) => {
      await new Promise((r) => setTimeout(r, HOLD_MS));
      return { status: 201, data: { got: req.body } };
    },
  });
  const port = await server.listen('127.0.0.1', 0);
  return { server, url: `http://127.0.0.1:${port}` };
}

t.test('answers held past 10 s are delivered', async (t) => {
  const uws = await loadUws();
  const fronts: Array<[string, () => FrontEnd]> = [['node:http', nodeFrontEnd]];
  if (uws.ok) fronts.push(['uws', () => uwsFrontEnd(uws.mod)]);
  else t.comment(`uWS does not load here (${uws.failures.map((f) => f.error).join('; ')}): node:http only`);
  const cases = fronts.flatMap(([name, make]) => [false, true].map((lookup) => ({ name, make, lookup })));
  await Promise.all(cases.map(async ({ name, make, lookup }) => {
    const what = `${name}, credential ${lookup ? 'looked up' : 'known at once'}`;
    const { server, url } = await serve(make(), lookup);
    t.teardown(() => server.close(100));
    const t0 = Date.now();
    const r = await fetch(`${url}/v1/slow`, {
      method: 'POST', headers: { authorization: 'Bearer hwk_long', 'content-type': 'application/json' },
      body: JSON.stringify({ data: { n: 1 } }),
    }).then(async (res) => ({ status: res.status, body: await res.json() as { data?: unknown } }),
      (e: Error & { cause?: { code?: string } }) => ({ status: 0, body: { error: e.cause?.code ?? e.message } as { data?: unknown } }));
    const ms = Date.now() - t0;
    t.equal(r.status, 201, `${what}: answered after ${ms} ms (${JSON.stringify(r.body).slice(0, 120)})`);
    t.same(r.body.data, { got: { data: { n: 1 } } }, `${what}: the answer is the handler's`);
  }));
});
