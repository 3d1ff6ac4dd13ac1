// Outbound webhooks: the registry, and one webhook's deliveries.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Link, Loaded, Time, useLoad, useTitle } from '../lib';

export function WebhookList() {
  useTitle('Webhooks');
  const [cursor, setCursor] = useState<string | undefined>();
  const load = useLoad((signal) => api.get('/v1/webhooks', { query: { limit: 100, cursor }, signal }), [cursor]);
  return (
    <>
      <h1>Webhooks</h1>
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No webhooks registered.</p> : (
            <table>
              <thead><tr><th>Name</th><th>URL</th><th>State</th><th>Updated</th></tr></thead>
              <tbody>{r.data.map((w) => (
                <tr key={w.id}>
                  <td><Link href={`/webhooks/${encodeURIComponent(w.id)}`}>{w.name}</Link></td><td><code>{w.config.url}</code></td>
                  <td>{w.disabledAt ? <>disabled <Time at={w.disabledAt} /></> : 'enabled'}</td><td><Time at={w.updatedAt} /></td>
                </tr>
              ))}</tbody>
            </table>
          )}
          {r.meta.nextCursor ? <button type="button" onClick={() => setCursor(r.meta.nextCursor!)}>Next page</button> : null}
        </>
      )}</Loaded>
    </>
  );
}

export function WebhookPage({ id }: { id: string }) {
  useTitle(`Webhook ${id}`);
  const hook = useLoad((signal) => api.get('/v1/webhooks/{id}', { params: { id }, signal }), [id]);
  const [cursor, setCursor] = useState<string | undefined>();
  const deliveries = useLoad((signal) => api.get('/v1/webhooks/{id}/deliveries', { params: { id }, query: { limit: 50, cursor }, signal }), [id, cursor]);
  return (
    <>
      <p><Link href="/webhooks">← Webhooks</Link></p>
      <Loaded load={hook}>{({ data: w }) => (
        <>
          <h1>{w.name}</h1>
          <dl class="facts">
            <dt>URL</dt><dd><code>{w.config.url}</code></dd>
            <dt>State</dt><dd>{w.disabledAt ? <>disabled since <Time at={w.disabledAt} /></> : 'enabled'}</dd>
            <dt>Payload version</dt><dd>{w.webhookPayloadVersion}</dd>
            <dt>Created</dt><dd><Time at={w.createdAt} /></dd>
          </dl>
        </>
      )}</Loaded>
      <h2>Deliveries</h2>
      <Loaded load={deliveries}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No deliveries.</p> : (
            <table>
              <thead><tr><th>Delivery</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Execution</th><th>Updated</th></tr></thead>
              <tbody>{r.data.map((d) => (
                <tr key={d.id}>
                  <td><code>{d.id}</code></td><td>{d.status}</td><td>{d.attempts}</td>
                  <td>{d.lastStatusCode ?? ''} {d.lastError ?? ''}</td>
                  <td>{d.executionId ? <Link href={`/executions/${encodeURIComponent(d.executionId)}`}>{d.executionId}</Link> : ''}</td>
                  <td><Time at={d.updatedAt} /></td>
                </tr>
              ))}</tbody>
            </table>
          )}
          {r.meta.nextCursor ? <button type="button" onClick={() => setCursor(r.meta.nextCursor!)}>Older</button> : null}
        </>
      )}</Loaded>
    </>
  );
}
