// The outbox through the public routes. A test that asserts a webhook or an e-mail went out once
// (or not at all) first waits until none of the rows it looks at is pending: the positive signal
// that the sender is done with them, and that a second send, had there been one, has happened.
import { call, poll, type TestServer } from './server.js';

const notPending = (list: Array<{ status: string }>) => list.every((x) => x.status !== 'pending');

/** The webhook's deliveries (newest first) once none is pending; the last list seen on timeout. */
export const settledDeliveries = (s: TestServer, token: string, webhookId: string, timeoutMs = 30_000): Promise<any[]> =>
  poll(() => call(s.url, 'GET', `/v1/webhooks/${webhookId}/deliveries?limit=100`, { token }),
    (r) => r.status === 200 && notPending(r.body.data), timeoutMs, 50).then((r) => r.body?.data ?? []);

/** The org's e-mails matching `query` (newest first) once none is pending; the last list seen on timeout. */
export const settledEmails = (s: TestServer, token: string, query: Record<string, string> = {}, timeoutMs = 30_000): Promise<any[]> =>
  poll(() => call(s.url, 'GET', `/v1/emails?${new URLSearchParams({ limit: '100', ...query })}`, { token }),
    (r) => r.status === 200 && notPending(r.body.data), timeoutMs, 50).then((r) => r.body?.data ?? []);

/**
 * `n` later test deliveries to `webhookId`, polled until `rcv` has them all: a send claimed before
 * them (a second send of a delivery, a claim that ignored a lease) has gone out by then. Answers
 * whether they all arrived and their ids (webhook-id), which the caller leaves out of its counts.
 */
export async function webhookMarkers(s: TestServer, token: string, webhookId: string, rcv: { hits: Array<{ id: string }> }, n = 1) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(s.url, 'POST', `/v1/webhooks/${webhookId}/test`, { token, body: { data: { payload: { marker: i } } } });
    if (r.status !== 202) throw new Error(`marker delivery: ${r.status} ${r.text}`);
    ids.push(r.body.data.id);
  }
  const arrived = await poll(async () => ids.every((id) => rcv.hits.some((h) => h.id === id)), (v) => v, 15_000, 20);
  return { arrived, ids };
}
