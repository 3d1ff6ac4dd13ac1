// Operator route: acknowledged events compared with the event store (pipeline/reconcile.ts).
import { reconcile } from '../../pipeline/reconcile.js';
import type { EventRecord } from '../../pipeline/types.js';
import { httpError } from '../../http/errors.js';
import type { Bind, Deps } from './deps.js';

/** A window wider than this is refused: the answer must come in seconds (the CLI slices longer ones). */
const MAX_WINDOW_MS = 24 * 3600_000;

export function reconcileRoutes(bind: Bind, d: Deps, onLanded?: (events: EventRecord[]) => Promise<void>) {
  bind('POST', '/v1/events/reconcile', async (req) => {
    const b = req.body.data;
    const since = new Date(b.since);
    const until = new Date(b.until);
    if (!(until.getTime() > since.getTime())) throw httpError('validation_failed', 'body /data/until: must be after since');
    if (until.getTime() - since.getTime() > MAX_WINDOW_MS) throw httpError('validation_failed', 'body /data/until: the window is at most 24 hours');
    return { data: await reconcile({ pool: d.pool, ch: d.ch, since, until, orgId: b.orgId, repair: b.repair ?? false, limit: b.limit ?? 100, onLanded }) };
  });
}
