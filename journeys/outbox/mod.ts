// What the outbox senders (journeys/webhooks, journeys/email) share: the claim-send-record loop,
// the close-time settling of sends in flight, and the retry backoff.
export { backoffDelay, MAX_RETRY_DELAY_MS, settleSends, startPassLoop, type PassLoop, type PassLoopOptions } from './loop.js';
