// Journeys with enable / disable (admin), each linking to its page and its executions; below them the
// recent pushes, each with its author beside the versions it filed (who changed running code).
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { ErrorBox, Link, Loaded, Time, useAction, useIsAdmin, useLoad, useTitle } from '../lib';
import { TriggerWords } from './journey';

function Toggle({ j, onDone }: { j: S['Journey']; onDone: () => void }) {
  const act = useAction();
  return (
    <>
      <button type="button" disabled={act.busy} aria-label={`${j.enabled ? 'Disable' : 'Enable'} ${j.key}`} onClick={() => act.run(async () => {
        await api.patch('/v1/journeys/{key}', { params: { key: j.key }, body: { data: { enabled: !j.enabled } } });
        onDone();
      })}>{j.enabled ? 'Disable' : 'Enable'}</button>
      <ErrorBox error={act.error} />
    </>
  );
}

const author = (p: S['Push']) => p.createdByScheme === 'pipelineKey' ? 'pipeline key' : `${p.createdBy} (${p.createdByRole ?? 'session'})`;

function Pushes() {
  const load = useLoad((signal) => api.get('/v1/pushes', { query: { limit: 20 }, signal }), []);
  return (
    <section aria-labelledby="pushes-h">
      <h2 id="pushes-h">Recent pushes</h2>
      <Loaded load={load}>{(r) => r.data.length === 0 ? <p class="muted">No pushes yet.</p> : (
        <table data-testid="pushes">
          <thead><tr><th>#</th><th>Pushed</th><th>By</th><th>App</th><th>Versions filed</th></tr></thead>
          <tbody>{r.data.map((p) => (
            <tr key={p.id}>
              <td>{p.seq}</td><td><Time at={p.createdAt} /></td><td data-testid="push-author">{author(p)}</td><td><code>{p.appId}</code></td>
              <td>{p.versions.length === 0 ? <span class="muted">none (unchanged)</span>
                : p.versions.map((v) => <div key={v.id}>{v.kind} <strong>{v.key}</strong> · {v.status}</div>)}</td>
            </tr>
          ))}</tbody>
        </table>
      )}</Loaded>
    </section>
  );
}

export function Journeys() {
  useTitle('Journeys');
  const admin = useIsAdmin();
  const [cursor, setCursor] = useState<string | undefined>();
  const load = useLoad((signal) => api.get('/v1/journeys', { query: { limit: 100, cursor }, signal }), [cursor]);
  return (
    <>
      <h1>Journeys</h1>
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No journeys yet: <code>headwater push</code> files them.</p> : (
            <table>
              <thead><tr><th>Key</th><th>Purpose</th><th>Trigger</th><th>App</th><th>Enabled</th><th>Updated</th><th>Executions</th>{admin ? <th>Change</th> : null}</tr></thead>
              <tbody>{r.data.map((j) => (
                <tr key={j.key}>
                  <td><Link href={`/journeys/${encodeURIComponent(j.key)}`}>{j.key}</Link></td><td>{j.purpose}</td><td><TriggerWords trigger={j.trigger} /></td><td><code>{j.appId}</code></td>
                  <td>{j.enabled ? 'yes' : 'no'}</td><td><Time at={j.updatedAt} /></td>
                  <td><Link href={`/executions?journey=${encodeURIComponent(j.key)}`}>executions</Link></td>
                  {admin ? <td><Toggle j={j} onDone={load.reload} /></td> : null}
                </tr>
              ))}</tbody>
            </table>
          )}
          {r.meta.nextCursor ? <button type="button" onClick={() => setCursor(r.meta.nextCursor!)}>Next page</button> : null}
        </>
      )}</Loaded>
      <Pushes />
    </>
  );
}
