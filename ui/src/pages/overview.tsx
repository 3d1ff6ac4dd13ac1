// Apps with their sources and when each last received data, and a live tail of the newest events.
import { api } from '../api';
import { Link, Loaded, Time, useInterval, useLoad, useTitle } from '../lib';

const TAIL_MS = 2000;

function Sources({ appId }: { appId: string }) {
  const load = useLoad((signal) => api.get('/v1/apps/{appId}/sources', { params: { appId }, signal }), [appId]);
  return (
    <Loaded load={load}>{(r) => (
      <ul>
        {r.data.map((s) => (
          <li key={s.id}><code>{s.id}</code> ({s.kind}{s.archivedAt ? ', archived' : ''}): last received <Time at={s.lastReceivedAt} /></li>
        ))}
      </ul>
    )}</Loaded>
  );
}

export function Overview() {
  useTitle('Overview');
  const apps = useLoad((signal) => api.get('/v1/apps', { query: { limit: 100 }, signal }), []);
  const tail = useLoad((signal) => api.get('/v1/events', { query: { limit: 20 }, signal }), []);
  useInterval(() => { if (!tail.loading) tail.reload(); }, TAIL_MS);
  return (
    <>
      <h1>Overview</h1>
      <section aria-labelledby="apps-h">
        <h2 id="apps-h">Apps</h2>
        <Loaded load={apps}>{(r) => r.data.length === 0 ? <p class="muted">No apps yet.</p> : (
          <table>
            <thead><tr><th>App</th><th>Environment</th><th>Status</th><th>Last received</th><th>Sources</th></tr></thead>
            <tbody>
              {r.data.map((a) => (
                <tr key={a.id}>
                  <td>{a.name}<br /><code class="muted">{a.id}</code></td>
                  <td>{a.environment}</td>
                  <td>{a.status}</td>
                  <td><Time at={a.lastReceivedAt} /></td>
                  <td><Sources appId={a.id} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}</Loaded>
      </section>
      <section aria-labelledby="tail-h">
        <h2 id="tail-h">Latest events <small class="muted">(live, every {TAIL_MS / 1000} s)</small></h2>
        <Loaded load={tail}>{(r) => r.data.length === 0 ? <p class="muted">No events yet.</p> : (
          <table data-testid="tail">
            <thead><tr><th>Event</th><th>Time</th><th>Profile</th><th>Properties</th></tr></thead>
            <tbody>
              {r.data.map((e) => (
                <tr key={e.id}>
                  <td>{e.event}</td>
                  <td><Time at={e.timestamp} /></td>
                  <td><Link href={`/profiles/${encodeURIComponent(e.profileId)}`}>{e.profileId}</Link></td>
                  <td><code>{JSON.stringify(e.properties)}</code></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}</Loaded>
      </section>
    </>
  );
}
