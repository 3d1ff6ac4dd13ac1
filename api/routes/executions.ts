// Executions: the durable record of journey runs. Listed newest first with filters; one execution
// answers its journal and logs; cancel stops a running or waiting one.
import { cancelExecution, executionOut, getExecution, journeyJournals, listExecutions } from '../../journeys/executions/mod.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

export function executionRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/executions', async (req) => {
    const q = req.query;
    const rows = await listExecutions(d.pool, req.principal.orgId!, {
      journey: q.journey, release: q.release, status: q.status, profileId: q.profileId, since: q.since,
      converted: q.converted, holdout: q.holdout, exitReason: q.exitReason,
      beforeId: decodeCursor(req.query.cursor, isString), limit: q.limit,
    });
    return page(rows, q.limit, (x) => x.id, executionOut);
  });

  bind('GET', '/v1/executions/{id}', async (req) => {
    const x = await getExecution(d.pool, req.principal.orgId!, req.params.id);
    if (!x) throw notFound('execution');
    return { data: x };
  });

  bind('POST', '/v1/executions/{id}/cancel', async (req) => {
    const r = await cancelExecution(d.pool, req.principal.orgId!, req.params.id);
    if ('notFound' in r) throw notFound('execution');
    if ('finished' in r) throw httpError('conflict', `the execution is ${r.finished}; only a running or waiting one can be cancelled`);
    return { data: r.execution };
  });
}

/** The journals of a journey's latest executions (the project tool's replay check). */
export function journalRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/journeys/{key}/journals', async (req) => {
    const { limit } = req.query;
    const j = await journeyJournals(d.pool, req.principal.orgId!, req.params.key, limit);
    if (!j) throw notFound('journey');
    return { data: j };
  });
}
