// Outbound webhooks: signing secrets, the SSRF guard, the durable delivery outbox and the sender
// that drains it.
export { newSigningSecret, sign, signingKey } from './sign.js';
export { maskPassword, splitPassword, MASK } from './url.js';
export { addressRefusal, bareHost, resolveTarget, type Address, type Target } from './guard.js';
export { parseRetryAfter, post, type Attempt } from './send.js';
export {
  claim, complete, enqueue, skipWaiting, toDelivery, DISABLED_REASON,
  type Claimed, type Delivery, type DeliveryStatus, type EnqueueInput, type EnqueueResult, type Outcome,
} from './store.js';
export { outcomeOf, startWebhookSender, type SenderOptions, type WebhookSender } from './sender.js';
export { enqueueWebhookDelivery, type WebhookDeliveryRequest } from './enqueue.js';
