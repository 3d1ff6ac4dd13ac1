// Executions: the filtered list, and one execution's journal (each call, its arguments and result)
// and logs, with cancel for admins.
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { BASE, ErrorBox, Json, Link, Loaded, Time, navigate, useAction, useIsAdmin, useLoad, useTitle } from '../lib';

const STATUSES: Array<S['ExecutionStatus']> = ['running', 'waiting', 'completed', 'failed', 'cancelled'];

export function ExecutionList({ query }: { query: URLSearchParams }) {
  useTitle('Executions');
  const journey = query.get('journey') ?? '';
  const status = query.get('status') ?? '';
  const profileId = query.get('profileId') ?? '';
  // From the journey page's conversion numbers (links only; the form does not set them).
  const flag = (k: string) => (query.get(k) === 'true' ? true : query.get(k) === 'false' ? false : undefined);
  const converted = flag('converted');
  const holdout = flag('holdout');
  const [f, setF] = useState({ journey, status, profileId });
  const [cursor, setCursor] = useState<string | undefined>();
  const load = useLoad((signal) => api.get('/v1/executions', {
    query: { limit: 50, cursor, journey: journey || undefined, status: (status || undefined) as S['ExecutionStatus'] | undefined, profileId: profileId || undefined, converted, holdout }, signal,
  }), [journey, status, profileId, converted, holdout, cursor]);
  const submit = (e: Event) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v.trim()) q.set(k, v.trim());
    setCursor(undefined);
    navigate(`${BASE}/executions${q.size ? '?' + q : ''}`);
  };
  return (
    <>
      <h1>Executions</h1>
      <form class="inline" onSubmit={submit} role="search">
        <label for="f-journey">Journey</label>
        <input id="f-journey" value={f.journey} onInput={(e) => setF({ ...f, journey: e.currentTarget.value })} />
        <label for="f-status">Status</label>
        <select id="f-status" value={f.status} onChange={(e) => setF({ ...f, status: e.currentTarget.value })}>
          <option value="">any</option>
          {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
        <label for="f-profile">Profile id</label>
        <input id="f-profile" value={f.profileId} onInput={(e) => setF({ ...f, profileId: e.currentTarget.value })} />
        <button type="submit">Filter</button>
      </form>
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No executions match.</p> : (
            <table data-testid="executions">
              <thead><tr><th>Execution</th><th>Journey</th><th>Status</th><th>Step</th><th>Profile</th><th>Started</th><th>Ended</th></tr></thead>
              <tbody>{r.data.map((x) => (
                <tr key={x.id}>
                  <td><Link href={`/executions/${encodeURIComponent(x.id)}`}>{x.id}</Link></td>
                  <td>{x.journeyKey}</td><td>{x.status}</td><td>{x.step ?? ''}</td>
                  <td><Link href={`/profiles/${encodeURIComponent(x.profileId)}`}>{x.profileId}</Link></td>
                  <td><Time at={x.startedAt} /></td><td>{x.endedAt ? <Time at={x.endedAt} /> : ''}</td>
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

function Cancel({ id, onDone }: { id: string; onDone: () => void }) {
  const act = useAction();
  return (
    <p>
      <button type="button" class="danger" disabled={act.busy} onClick={() => act.run(async () => {
        await api.post('/v1/executions/{id}/cancel', { params: { id }, body: { data: {} } });
        onDone();
      })}>Cancel execution</button>
      <ErrorBox error={act.error} />
    </p>
  );
}

export function ExecutionPage({ id }: { id: string }) {
  useTitle(`Execution ${id}`);
  const admin = useIsAdmin();
  const load = useLoad((signal) => api.get('/v1/executions/{id}', { params: { id }, signal }), [id]);
  return (
    <>
      <p><Link href="/executions">← Executions</Link></p>
      <h1>Execution <code>{id}</code></h1>
      <Loaded load={load}>{({ data: x }) => (
        <>
          <dl class="facts">
            <dt>Journey</dt><dd><Link href={`/executions?journey=${encodeURIComponent(x.journeyKey)}`}>{x.journeyKey}</Link></dd>
            <dt>Status</dt><dd data-testid="status">{x.status}{x.error ? ` (${x.error})` : ''}</dd>
            <dt>Profile</dt><dd><Link href={`/profiles/${encodeURIComponent(x.profileId)}`}>{x.profileId}</Link></dd>
            <dt>Step</dt><dd>{x.step ?? '—'}</dd>
            <dt>Timer</dt><dd><Time at={x.timerDeadline} /></dd>
            <dt>Release</dt><dd><code>{x.releaseId}</code> ({x.environment})</dd>
            <dt>Started</dt><dd><Time at={x.startedAt} /></dd>
            <dt>Ended</dt><dd><Time at={x.endedAt} /></dd>
          </dl>
          {admin && (x.status === 'running' || x.status === 'waiting') ? <Cancel id={x.id} onDone={load.reload} /> : null}
          <section aria-labelledby="j-h">
            <h2 id="j-h">Journal ({x.journal.length} calls)</h2>
            {x.journal.length === 0 ? <p class="muted">No calls yet.</p> : (
              <table data-testid="journal">
                <thead><tr><th>#</th><th>Call</th><th>Arguments</th><th>Result</th><th>Recorded</th></tr></thead>
                <tbody>{x.journal.map((e, i) => (
                  <tr key={i}>
                    <td>{e.at ?? i}</td><td>{e.call.name}</td><td><Json value={e.call.args} /></td>
                    <td class={e.result.ok ? '' : 'state-denied'}><Json value={e.result.ok ? e.result.value : e.result.error} /></td>
                    <td>{e.recordedAt ? <Time at={e.recordedAt} /> : <span class="muted">not recorded</span>}</td>
                  </tr>
                ))}</tbody>
              </table>
            )}
          </section>
          <section aria-labelledby="l-h">
            <h2 id="l-h">Logs</h2>
            {x.logs.length === 0 ? <p class="muted">Nothing logged.</p> : (
              <table>
                <thead><tr><th>#</th><th>Level</th><th>Message</th><th>Time</th></tr></thead>
                <tbody>{x.logs.map((l) => <tr key={l.seq} class={`log-${l.level}`}><td>{l.seq}</td><td>{l.level}</td><td>{l.message}</td><td><Time at={l.createdAt} /></td></tr>)}</tbody>
              </table>
            )}
          </section>
        </>
      )}</Loaded>
    </>
  );
}
