// What the journey runtime calls for `ctx.webhook.send(name, payload)`: a delivery to the org's
// webhook of that name, idempotent on (org, key) so a repeated activation enqueues once.
import type pg from 'pg';
import { enqueue, type EnqueueResult } from './store.js';

export interface WebhookDeliveryRequest {
  orgId: string;
  webhookName: string;
  executionId: string;
  /** Unique per call within the org, e.g. `<executionId>:<journal position>`. */
  key: string;
  payload: Record<string, unknown>;
}

/**
 * Records the delivery (`pending`, or `skipped_disabled` while the webhook is disabled) with type
 * `journey.webhook`. `not_found` when the org has no webhook of that name. Call it inside the
 * activation's transaction to make the send part of it; the sender picks it up after commit.
 */
export function enqueueWebhookDelivery(client: Pick<pg.Pool, 'query'> | pg.PoolClient, r: WebhookDeliveryRequest): Promise<EnqueueResult> {
  return enqueue(client, {
    orgId: r.orgId, webhook: { name: r.webhookName }, executionId: r.executionId, key: r.key, type: 'journey.webhook', payload: r.payload,
  });
}
