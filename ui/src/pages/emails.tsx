// E-mails journeys sent (the outbox), newest first, filtered by status.
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { BASE, Link, Loaded, Time, navigate, useLoad, useTitle } from '../lib';

const STATUSES: Array<S['Email']['status']> = ['pending', 'sent', 'failed', 'stored'];

export function EmailList({ query }: { query: URLSearchParams }) {
  useTitle('E-mails');
  const status = (query.get('status') ?? '') as S['Email']['status'] | '';
  const [cursor, setCursor] = useState<string | undefined>();
  const load = useLoad((signal) => api.get('/v1/emails', { query: { limit: 50, cursor, status: status || undefined }, signal }), [status, cursor]);
  return (
    <>
      <h1>E-mails</h1>
      <form class="inline" role="search" onSubmit={(e) => e.preventDefault()}>
        <label for="e-status">Status</label>
        <select id="e-status" value={status} onChange={(e) => { setCursor(undefined); navigate(`${BASE}/emails${e.currentTarget.value ? '?status=' + e.currentTarget.value : ''}`); }}>
          <option value="">any</option>
          {STATUSES.map((x) => <option key={x} value={x}>{x}</option>)}
        </select>
      </form>
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No e-mails.</p> : (
            <table data-testid="emails">
              <thead><tr><th>To</th><th>Subject</th><th>Template</th><th>Status</th><th>Attempts</th><th>Created</th><th>Execution</th></tr></thead>
              <tbody>{r.data.map((m) => (
                <tr key={m.id}>
                  <td>{m.to}</td><td>{m.subject}</td><td>{m.template || <span class="muted">test</span>}</td>
                  <td class={m.status === 'failed' ? 'state-denied' : ''}>{m.status}{m.lastError ? ` (${m.lastError})` : ''}</td>
                  <td>{m.attempts}</td><td><Time at={m.createdAt} /></td>
                  <td>{m.executionId ? <Link href={`/executions/${encodeURIComponent(m.executionId)}`}>{m.executionId}</Link> : ''}</td>
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
