// Artifacts: HEAD answers from the stored size without reading the bytes; PUT streams the body into
// chunked rows while hashing it, under the artifact limit (413 artifact_too_large as soon as it is
// passed), never holding the body whole.
import { getArtifact, storeArtifact } from '../../journeys/definitions/mod.js';
import { httpError } from '../../http/errors.js';
import type { Bind, Deps } from './deps.js';

export function artifactRoutes(bind: Bind, d: Deps) {
  bind('HEAD', '/v1/artifacts/{digest}', async (req) => {
    const a = await getArtifact(d.pool, req.principal.orgId!, req.params.digest);
    return a ? { status: 200, headLength: a.size } : { status: 404, headLength: 0 };
  });

  bind('PUT', '/v1/artifacts/{digest}', async (req) => {
    const digest = req.params.digest;
    const r = await storeArtifact(d.pool, {
      orgId: req.principal.orgId!, digest, kind: req.query.kind, body: req.stream!,
    });
    if ('mismatch' in r) throw httpError('validation_failed', `body: the bytes hash to ${r.mismatch}, not to the digest path /digest (${digest})`);
    return { status: r.created ? 201 : 200, data: r.stored };
  }, { streamBody: true, bodyLimit: d.config.artifactLimit, bodyLimitCode: 'artifact_too_large' });
}
