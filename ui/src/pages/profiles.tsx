// Find a profile by an identifier; one profile: traits, consent, identifiers, what was merged into
// it, its segments, and its event timeline (newest first, one page at a time).
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { BASE, Json, Link, Loaded, Time, navigate, useLoad, useTitle } from '../lib';
import { ProfilePrivacy } from './privacy';

const KINDS: Array<S['IdentifierKind']> = ['userId', 'anonymousId', 'email'];
const PAGE = 50;

export function ProfileSearch({ kind, value }: { kind: string; value: string }) {
  useTitle('Profiles');
  const [k, setK] = useState(kind);
  const [v, setV] = useState(value);
  const found = useLoad((signal) => value
    ? api.get('/v1/profiles', { query: { kind: kind as S['IdentifierKind'], value }, signal })
    : Promise.resolve(null), [kind, value]);
  const submit = (e: Event) => {
    e.preventDefault();
    navigate(`${BASE}/profiles?${new URLSearchParams({ kind: k, value: v.trim() })}`);
  };
  return (
    <>
      <h1>Profiles</h1>
      <form class="inline" onSubmit={submit} role="search">
        <label for="kind">Identifier</label>
        <select id="kind" value={k} onChange={(e) => setK(e.currentTarget.value)}>
          {KINDS.map((x) => <option key={x} value={x}>{x}</option>)}
        </select>
        <label for="value">Value</label>
        <input id="value" required value={v} onInput={(e) => setV(e.currentTarget.value)} />
        <button type="submit">Find</button>
      </form>
      <Loaded load={found}>{(r) => r === null ? null : r.data.length === 0
        ? <p>No live profile holds {kind} <code>{value}</code>.</p>
        : (
          <ul>
            {r.data.map((p) => (
              <li key={p.id}><Link href={`/profiles/${encodeURIComponent(p.id)}`}>{p.id}</Link> (app <code>{p.appId}</code>, {p.environment}, updated <Time at={p.updatedAt} />)</li>
            ))}
          </ul>
        )}</Loaded>
    </>
  );
}

function Timeline({ id }: { id: string }) {
  // One page per request: a cursor stack lets the reader go back without refetching everything.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const load = useLoad((signal) => api.get('/v1/events', { query: { profileId: id, limit: PAGE, cursor }, signal }), [id, cursor]);
  return (
    <section aria-labelledby="tl-h">
      <h2 id="tl-h">Timeline <small class="muted">(newest first, page {cursors.length + 1})</small></h2>
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No events.</p> : (
            <table data-testid="timeline">
              <thead><tr><th>Time</th><th>Event</th><th>Properties</th><th>Profile</th></tr></thead>
              <tbody>
                {r.data.map((e) => (
                  <tr key={e.id}>
                    <td><Time at={e.timestamp} /></td><td>{e.event}</td><td><code>{JSON.stringify(e.properties)}</code></td>
                    <td>{e.profileId === id ? <span class="muted">this</span> : <code title="merged into this profile">{e.profileId}</code>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p>
            {cursors.length > 0 ? <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button> : null}{' '}
            {r.meta.hasMore && r.meta.nextCursor ? <button type="button" onClick={() => setCursors([...cursors, r.meta.nextCursor!])}>Older</button> : null}
          </p>
        </>
      )}</Loaded>
    </section>
  );
}

function Memberships({ id }: { id: string }) {
  const load = useLoad(async (signal) => {
    const [m, segs] = await Promise.all([
      api.get('/v1/profiles/{id}/segments', { params: { id }, signal }),
      api.get('/v1/segments', { query: { limit: 100 }, signal }),
    ]);
    const names = new Map(segs.data.map((s) => [s.id, s.name]));
    return m.data.map((x) => ({ ...x, name: names.get(x.segmentId) }));
  }, [id]);
  return (
    <section aria-labelledby="seg-h">
      <h2 id="seg-h">Segments</h2>
      <Loaded load={load}>{(rows) => rows.length === 0 ? <p class="muted">Member of no segment.</p> : (
        <ul>{rows.map((m) => <li key={m.segmentId}><Link href={`/segments/${encodeURIComponent(m.segmentId)}`}>{m.name ?? m.segmentId}</Link> since <Time at={m.enteredAt} /></li>)}</ul>
      )}</Loaded>
    </section>
  );
}

function Merged({ id }: { id: string }) {
  const load = useLoad((signal) => api.get('/v1/profiles/{id}/merged', { params: { id }, signal }), [id]);
  return (
    <section aria-labelledby="m-h">
      <h2 id="m-h">Merged into this profile</h2>
      <Loaded load={load}>{(r) => r.data.length === 0 ? <p class="muted">None.</p> : (
        <ul>{r.data.map((p) => <li key={p.id}><Link href={`/profiles/${encodeURIComponent(p.id)}`}>{p.id}</Link> ({p.identifiers.map((i) => `${i.kind}=${i.value}`).join(', ')})</li>)}</ul>
      )}</Loaded>
    </section>
  );
}

export function ProfilePage({ id }: { id: string }) {
  useTitle(`Profile ${id}`);
  const load = useLoad((signal) => api.get('/v1/profiles/{id}', { params: { id }, signal }), [id]);
  return (
    <>
      <h1>Profile <code>{id}</code></h1>
      <Loaded load={load}>{({ data: p }) => (
        <>
          {p.mergedInto ? <p class="note">This profile was merged into <Link href={`/profiles/${encodeURIComponent(p.mergedInto)}`}>{p.mergedInto}</Link>.</p> : null}
          <dl class="facts">
            <dt>App</dt><dd><code>{p.appId}</code> ({p.environment})</dd>
            <dt>Created</dt><dd><Time at={p.createdAt} /></dd>
            <dt>Updated</dt><dd><Time at={p.updatedAt} /></dd>
            <dt>Identifiers</dt><dd>{p.identifiers.map((i) => <span key={i.kind + i.value} class="tag">{i.kind}: {i.value}</span>)}</dd>
          </dl>
          <div class="cols">
            <section aria-labelledby="t-h"><h2 id="t-h">Traits</h2><Json value={p.traits} /></section>
            <section aria-labelledby="c-h"><h2 id="c-h">Consent</h2><Json value={p.consent} /></section>
          </div>
          <Memberships id={id} />
          <Merged id={id} />
          <ProfilePrivacy id={id} />
        </>
      )}</Loaded>
      {load.error ? null : <Timeline id={id} />}
    </>
  );
}
