// Profiles: the newest first with a search, or the holders of one identifier; one profile: traits (a key / value table), consent, identifiers, what was merged into
// it, its segments, and its event timeline (newest first, one page at a time).
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { BASE, Json, Link, Loaded, Time, navigate, useLoad, useTitle } from '../lib';
import { ProfilePrivacy } from './privacy';

const KINDS: Array<S['IdentifierKind']> = ['userId', 'anonymousId', 'email'];
const PAGE = 50;

/** What a person is called, from the traits that usually say it; null when none does. */
export function nameOf(traits: Record<string, unknown>): string | null {
  const str = (k: string) => (typeof traits[k] === 'string' && (traits[k] as string).trim() ? (traits[k] as string).trim() : null);
  const full = [str('firstName') ?? str('first_name'), str('lastName') ?? str('last_name')].filter(Boolean).join(' ');
  return str('name') ?? (full || null);
}

function emailOf(p: S['Profile']): string | null {
  const t = p.traits as Record<string, unknown>;
  if (typeof t.email === 'string' && t.email) return t.email;
  return p.identifiers.find((i) => i.kind === 'email')?.value ?? null;
}

function ProfileRows({ rows }: { rows: Array<S['Profile']> }) {
  return (
    <table data-testid="profiles">
      <thead><tr><th>Name</th><th>E-mail</th><th>Identifiers</th><th>App</th><th>Updated</th></tr></thead>
      <tbody>{rows.map((p) => {
        const name = nameOf(p.traits as Record<string, unknown>);
        const email = emailOf(p);
        return (
          <tr key={p.id}>
            <td><Link href={`/profiles/${encodeURIComponent(p.id)}`}>{name ?? email ?? p.id}</Link></td>
            <td>{email ?? ''}</td>
            <td>{p.identifiers.filter((i) => i.kind !== 'email').map((i) => <span key={i.kind + i.value} class="tag">{i.kind}: {i.value}</span>)}</td>
            <td><code>{p.appId}</code> ({p.environment})</td>
            <td><Time at={p.updatedAt} /></td>
          </tr>
        );
      })}</tbody>
    </table>
  );
}

/** The newest profiles, narrowed by a search over identifiers and string traits (`q`), or the
 * profiles holding one exact identifier (`kind` + `value`). */
export function ProfileSearch({ query }: { query: URLSearchParams }) {
  useTitle('Profiles');
  const kind = query.get('kind') ?? 'userId';
  const value = query.get('value') ?? '';
  const q = query.get('q') ?? '';
  const [k, setK] = useState(kind);
  const [v, setV] = useState(value);
  const [text, setText] = useState(q);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const found = useLoad((signal) => value
    ? api.get('/v1/profiles', { query: { kind: kind as S['IdentifierKind'], value }, signal })
    : api.get('/v1/profiles', { query: { q: q || undefined, limit: PAGE, cursor }, signal }), [kind, value, q, cursor]);
  const search = (e: Event) => {
    e.preventDefault();
    setCursors([]);
    navigate(`${BASE}/profiles${text.trim() ? '?' + new URLSearchParams({ q: text.trim() }) : ''}`);
  };
  const lookup = (e: Event) => {
    e.preventDefault();
    navigate(`${BASE}/profiles?${new URLSearchParams({ kind: k, value: v.trim() })}`);
  };
  return (
    <>
      <h1>Profiles</h1>
      <form class="inline" onSubmit={search} role="search" aria-label="Search profiles">
        <label for="q">Search</label>
        <input id="q" type="search" placeholder="name, e-mail, id…" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit">Search</button>
      </form>
      <form class="inline" onSubmit={lookup} role="search">
        <label for="kind">Identifier</label>
        <select id="kind" value={k} onChange={(e) => setK(e.currentTarget.value)}>
          {KINDS.map((x) => <option key={x} value={x}>{x}</option>)}
        </select>
        <label for="value">Value</label>
        <input id="value" required value={v} onInput={(e) => setV(e.currentTarget.value)} />
        <button type="submit">Find</button>
      </form>
      <Loaded load={found}>{(r) => r.data.length === 0
        ? (value ? <p>No live profile holds {kind} <code>{value}</code>.</p> : <p class="muted">{q ? <>No profile matches <code>{q}</code>.</> : 'No profiles yet.'}</p>)
        : (
          <>
            <ProfileRows rows={r.data} />
            <p>
              {cursors.length > 0 ? <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button> : null}{' '}
              {r.meta.hasMore && r.meta.nextCursor ? <button type="button" onClick={() => setCursors([...cursors, r.meta.nextCursor!])}>Older</button> : null}
            </p>
          </>
        )}</Loaded>
    </>
  );
}

/** Traits as a key / value table; objects and arrays shown as JSON. */
function Traits({ traits }: { traits: Record<string, unknown> }) {
  const keys = Object.keys(traits).sort();
  if (keys.length === 0) return <p class="muted">No traits.</p>;
  return (
    <table data-testid="traits">
      <thead><tr><th>Trait</th><th>Value</th></tr></thead>
      <tbody>{keys.map((k) => {
        const v = traits[k];
        return <tr key={k}><th scope="row">{k}</th><td>{typeof v === 'string' ? v : typeof v === 'object' && v !== null ? <Json value={v} /> : String(v)}</td></tr>;
      })}</tbody>
    </table>
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
      <p><Link href="/profiles">← Profiles</Link></p>
      <h1>{(load.data && nameOf(load.data.data.traits as Record<string, unknown>)) ?? 'Profile'} <code>{id}</code></h1>
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
            <section aria-labelledby="t-h"><h2 id="t-h">Traits</h2><Traits traits={p.traits as Record<string, unknown>} /></section>
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
