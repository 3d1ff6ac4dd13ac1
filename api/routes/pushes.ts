// Pushes (POST with a session or the org pipeline key; reads with a session). A push that changes
// no bundle is still recorded, with zero versions.
import {
  createPush, getPush, listPushes, manifestProblems, pushSourceDigest, readArtifact, type Compiler,
} from '../../journeys/definitions/mod.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, encodeCursor } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

const isSeq = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

export function pushRoutes(bind: Bind, d: Deps, compiler: Pick<Compiler, 'kick'>) {
  bind('POST', '/v1/pushes', async (req) => {
    const p = req.principal;
    const { manifest, appId, orgId } = req.body.data;
    if (orgId !== p.orgId) throw httpError('validation_failed', 'body /data/orgId: is not the org of the credential');
    const problems = await manifestProblems(d.pool, p.orgId!, appId, manifest);
    if (problems.length) {
      const more = problems.length > 10 ? `; and ${problems.length - 10} more` : '';
      throw httpError('validation_failed', `body ${problems.slice(0, 10).join('; body ')}${more}`);
    }
    // Every push names its author (issue 23): a member's push can go live on an enabled journey.
    const author = p.scheme === 'session'
      ? { createdBy: p.userId ?? 'session', createdByScheme: 'session' as const, createdByRole: p.role }
      : { createdBy: 'pipelineKey', createdByScheme: 'pipelineKey' as const, createdByRole: null };
    const { id, versions } = await createPush(d.pool, { orgId: p.orgId!, appId, manifest, ...author });
    d.log.info('push created', { orgId: p.orgId, pushId: id, appId, versions, ...author });
    if (versions > 0) compiler.kick();
    return { status: 201, data: await getPush(d.pool, p.orgId!, id) };
  });

  bind('GET', '/v1/pushes', async (req) => {
    const { limit, appId } = req.query;
    const beforeSeq = decodeCursor(req.query.cursor, isSeq);
    const rows = await listPushes(d.pool, req.principal.orgId!, { appId, beforeSeq, limit });
    const hasMore = rows.length > limit;
    const items = hasMore ? rows.slice(0, limit) : rows;
    return { data: items, meta: { hasMore, nextCursor: hasMore ? encodeCursor(items[items.length - 1]!.seq) : null } };
  });

  bind('GET', '/v1/pushes/{id}', async (req) => {
    const push = await getPush(d.pool, req.principal.orgId!, req.params.id);
    if (!push) throw notFound('push');
    return { data: push };
  });

  bind('GET', '/v1/pushes/{id}/source', async (req) => {
    const orgId = req.principal.orgId!;
    const digest = await pushSourceDigest(d.pool, orgId, req.params.id);
    if (digest === null) throw notFound('push');
    const bytes = await readArtifact(d.pool, orgId, digest);
    if (!bytes) throw notFound('source artifact');
    return { raw: bytes, contentType: 'application/gzip', headers: { 'x-content-digest': `sha256=${digest}` } };
  });
}
