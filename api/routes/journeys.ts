// Journeys: listed in key order; PATCH turns one on or off (enabling needs a ready version).
import { getJourney, listJourneys, setJourneyEnabled } from '../../journeys/definitions/mod.js';
import { httpError, notFound } from '../../http/errors.js';
import { decodeCursor, isString, page } from '../../http/pagination.js';
import type { Bind, Deps } from './deps.js';

export function journeyRoutes(bind: Bind, d: Deps) {
  bind('GET', '/v1/journeys', async (req) => {
    const { limit } = req.query;
    const rows = await listJourneys(d.pool, req.principal.orgId!, { afterKey: decodeCursor(req.query.cursor, isString), limit });
    return page(rows, limit, (j) => j.key, (j) => j);
  });

  bind('GET', '/v1/journeys/{key}', async (req) => {
    const j = await getJourney(d.pool, req.principal.orgId!, req.params.key);
    if (!j) throw notFound('journey');
    return { data: j };
  });

  bind('PATCH', '/v1/journeys/{key}', async (req) => {
    const key = req.params.key;
    const r = await setJourneyEnabled(d.pool, req.principal.orgId!, key, req.body.data.enabled);
    if ('notFound' in r) throw notFound('journey');
    if ('notReady' in r) throw httpError('release_not_ready', `journey ${JSON.stringify(key)} has no ready version to run`);
    const p = req.principal;
    // Enabling puts the newest ready version live: the log says which, and who turned it on.
    d.log.info(r.journey.enabled ? 'journey enabled' : 'journey disabled', {
      orgId: p.orgId, journey: key, versionId: r.journey.versionId, by: p.userId ?? p.scheme, role: p.role,
    });
    return { data: r.journey };
  });
}
