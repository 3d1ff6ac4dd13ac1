// The artifact limit (HEADWATER_ARTIFACT_LIMIT): it replaces the global body limit on artifact
// uploads, and is enforced while the body streams in (answered before the body ends). A server of
// its own, with small limits (one embedded server per test process).
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { startServer, call, createOrg, expectError, rawRequest } from './helpers/server.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const limit = 64 * 1024;
const small = await startServer(['--artifact-limit', String(limit), '--body-limit', '1024']);
t.teardown(() => small.close());

t.test('the artifact limit replaces the body limit and is enforced while the body streams', async (t) => {
  const o = await createOrg(small);
  const exact = randomBytes(limit);
  const r = await call(small.url, 'PUT', `/v1/artifacts/${sha(exact)}?kind=bundle`, { token: o.deployKey, raw: exact });
  t.equal(r.status, 201, 'exactly the limit (64 KiB, above the 1 KiB body limit) is accepted');

  const over = randomBytes(limit + 1);
  const declared = await call(small.url, 'PUT', `/v1/artifacts/${sha(over)}?kind=bundle`, { token: o.deployKey, raw: over });
  expectError(t, declared, 413, 'artifact_too_large', 'content-length one byte over the limit');

  // Chunked, no content-length: the answer arrives while the request is still open, after the
  // limit was passed and before the body ended, so the server did not wait for (or hold) it all.
  const digest = sha(randomBytes(8));
  const streamed = await rawRequest(small.url, `/v1/artifacts/${digest}?kind=bundle`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${o.deployKey}`, 'transfer-encoding': 'chunked', 'content-type': 'application/octet-stream' },
    chunks: [randomBytes(40 * 1024), randomBytes(40 * 1024)],
    destroyAfterMs: 10_000,
  });
  t.equal(streamed.status, 413, 'answered before the body ended');
  t.equal(streamed.body?.error?.code, 'artifact_too_large');
  t.equal((await call(small.url, 'HEAD', `/v1/artifacts/${digest}`, { token: o.deployKey })).status, 404, 'nothing stored');
  t.equal((await call(small.url, 'GET', '/health/live')).status, 200, 'the server is fine');
});
