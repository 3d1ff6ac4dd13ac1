// Segments: the list, and one segment's predicate builder with a debounced live preview
// (POST /v1/segments/preview), save / edit / delete for admins, and its members.
import { useEffect, useState } from 'preact/hooks';
import { api, type S } from '../api';
import { BASE, ErrorBox, Json, Link, Loaded, Time, navigate, useAction, useIsAdmin, useLoad, useTitle } from '../lib';

const PREVIEW_DELAY_MS = 400;
const TRAIT_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'exists', 'notExists'] as const;
const EVENT_OPS = ['performed', 'notPerformed'] as const;

/** One predicate as typed in the form (strings), turned into the API's shape by toPredicate. */
interface Draft { kind: 'trait' | 'event'; name: string; op: string; value: string; atLeast: string; withinDays: string }

const blank = (): Draft => ({ kind: 'trait', name: '', op: 'eq', value: '', atLeast: '1', withinDays: '' });

/** A value is JSON when it parses as JSON (5, true, "x", [1]); anything else is the string typed. */
function parseValue(s: string): unknown {
  try { return JSON.parse(s); } catch { return s; }
}

function toPredicate(d: Draft): S['PredicateInput'] {
  if (d.kind === 'event') {
    const p: S['EventPredicateInput'] = { kind: 'event', name: d.name, op: d.op as (typeof EVENT_OPS)[number], atLeast: Number(d.atLeast) || 1 };
    if (d.withinDays.trim()) p.withinDays = Number(d.withinDays);
    return p;
  }
  const p: S['TraitPredicate'] = { kind: 'trait', name: d.name, op: d.op as (typeof TRAIT_OPS)[number] };
  if (d.op !== 'exists' && d.op !== 'notExists') p.value = parseValue(d.value);
  return p;
}

function fromPredicate(p: S['Predicate']): Draft {
  if (p.kind === 'event') return { kind: 'event', name: p.name, op: p.op, value: '', atLeast: String(p.atLeast), withinDays: p.withinDays ? String(p.withinDays) : '' };
  return { kind: 'trait', name: p.name, op: p.op, value: p.value === undefined ? '' : typeof p.value === 'string' ? p.value : JSON.stringify(p.value), atLeast: '1', withinDays: '' };
}

export function SegmentList() {
  useTitle('Segments');
  const admin = useIsAdmin();
  const [cursor, setCursor] = useState<string | undefined>();
  const load = useLoad((signal) => api.get('/v1/segments', { query: { limit: 50, cursor }, signal }), [cursor]);
  return (
    <>
      <h1>Segments</h1>
      {admin ? <p><Link href="/segments/new" class="button">New segment</Link></p> : null}
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No segments yet.</p> : (
            <table>
              <thead><tr><th>Name</th><th>Description</th><th>Environments</th><th>Updated</th></tr></thead>
              <tbody>{r.data.map((s) => (
                <tr key={s.id}><td><Link href={`/segments/${encodeURIComponent(s.id)}`}>{s.name}</Link></td><td>{s.description}</td><td>{s.environments.join(', ')}</td><td><Time at={s.updatedAt} /></td></tr>
              ))}</tbody>
            </table>
          )}
          {r.meta.nextCursor ? <button type="button" onClick={() => setCursor(r.meta.nextCursor!)}>Next page</button> : null}
        </>
      )}</Loaded>
    </>
  );
}

function PredicateRow({ d, i, set, remove, readOnly }: { d: Draft; i: number; set: (d: Draft) => void; remove: () => void; readOnly: boolean }) {
  const id = (f: string) => `p${i}-${f}`;
  return (
    <fieldset class="predicate">
      <legend>Condition {i + 1}</legend>
      <label for={id('kind')}>On</label>
      <select id={id('kind')} disabled={readOnly} value={d.kind} onChange={(e) => {
        const kind = e.currentTarget.value as Draft['kind'];
        set({ ...d, kind, op: kind === 'event' ? 'performed' : 'eq' });
      }}>
        <option value="trait">trait</option><option value="event">event</option>
      </select>
      <label for={id('name')}>{d.kind === 'event' ? 'Event name' : 'Trait name'}</label>
      <input id={id('name')} readOnly={readOnly} value={d.name} onInput={(e) => set({ ...d, name: e.currentTarget.value })} />
      <label for={id('op')}>Operator</label>
      <select id={id('op')} disabled={readOnly} value={d.op} onChange={(e) => set({ ...d, op: e.currentTarget.value })}>
        {(d.kind === 'event' ? EVENT_OPS : TRAIT_OPS).map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
      {d.kind === 'trait' && d.op !== 'exists' && d.op !== 'notExists' ? (
        <><label for={id('value')}>Value (JSON or text)</label>
          <input id={id('value')} readOnly={readOnly} value={d.value} onInput={(e) => set({ ...d, value: e.currentTarget.value })} /></>
      ) : null}
      {d.kind === 'event' ? (
        <><label for={id('atLeast')}>At least</label>
          <input id={id('atLeast')} type="number" min={1} readOnly={readOnly} value={d.atLeast} onInput={(e) => set({ ...d, atLeast: e.currentTarget.value })} />
          <label for={id('within')}>Within days</label>
          <input id={id('within')} type="number" min={1} readOnly={readOnly} value={d.withinDays} onInput={(e) => set({ ...d, withinDays: e.currentTarget.value })} /></>
      ) : null}
      {readOnly ? null : <button type="button" onClick={remove} aria-label={`Remove condition ${i + 1}`}>Remove</button>}
    </fieldset>
  );
}

function Preview({ definition }: { definition: S['DefinitionInput'] | null }) {
  const [debounced, setDebounced] = useState<string | null>(null);
  const key = definition ? JSON.stringify(definition) : null;
  useEffect(() => { const t = setTimeout(() => setDebounced(key), PREVIEW_DELAY_MS); return () => clearTimeout(t); }, [key]);
  const load = useLoad((signal) => debounced
    ? api.post('/v1/segments/preview', { body: { data: JSON.parse(debounced) as S['DefinitionInput'] }, signal }).then((r) => r.data)
    : Promise.resolve(null), [debounced]);
  return (
    <section aria-labelledby="pv-h" aria-live="polite">
      <h2 id="pv-h">Preview</h2>
      {load.error ? <ErrorBox error={load.error} /> : load.data === undefined || (load.loading && !load.data) ? <p class="muted">Computing…</p> : load.data === null ? <p class="muted">Complete every condition to see a preview.</p> : (
        <>
          <p><strong data-testid="preview-count">{load.data.memberCount}</strong> matching profile{load.data.memberCount === 1 ? '' : 's'} (of {load.data.scanned} scanned{load.data.truncated ? ', scan stopped at the cap' : ''}).</p>
          <ul>{load.data.members.slice(0, 10).map((id) => <li key={id}><Link href={`/profiles/${encodeURIComponent(id)}`}>{id}</Link></li>)}</ul>
        </>
      )}
    </section>
  );
}

function Members({ id }: { id: string }) {
  const [cursor, setCursor] = useState<string | undefined>();
  const load = useLoad((signal) => api.get('/v1/segments/{id}/members', { params: { id }, query: { limit: 50, cursor }, signal }), [id, cursor]);
  return (
    <section aria-labelledby="mem-h">
      <h2 id="mem-h">Members</h2>
      <Loaded load={load}>{(r) => (
        <>
          {r.data.length === 0 ? <p class="muted">No members.</p> : (
            <ul data-testid="members">{r.data.map((m) => <li key={m.profileId}><Link href={`/profiles/${encodeURIComponent(m.profileId)}`}>{m.profileId}</Link> since <Time at={m.enteredAt} /></li>)}</ul>
          )}
          {r.meta.nextCursor ? <button type="button" onClick={() => setCursor(r.meta.nextCursor!)}>Next members</button> : null}
        </>
      )}</Loaded>
    </section>
  );
}

function Editor({ segment }: { segment?: S['SegmentWithCount'] }) {
  const admin = useIsAdmin();
  const readOnly = !admin;
  const [name, setName] = useState(segment?.name ?? '');
  const [description, setDescription] = useState(segment?.description ?? '');
  const [match, setMatch] = useState<'all' | 'any'>(segment?.definition.match ?? 'all');
  const [drafts, setDrafts] = useState<Draft[]>(segment ? segment.definition.predicates.map(fromPredicate) : [blank()]);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const act = useAction();
  const complete = drafts.length > 0 && drafts.every((d) => d.name.trim() !== '');
  const definition: S['DefinitionInput'] | null = complete
    ? { match, predicates: drafts.map(toPredicate), ...(segment?.definition.appId !== undefined ? { appId: segment.definition.appId } : {}) }
    : null;
  const save = (e: Event) => {
    e.preventDefault();
    if (!definition) return;
    void act.run(async () => {
      const data = { name: name.trim(), description: description.trim() || null, definition };
      if (segment) {
        await api.patch('/v1/segments/{id}', { params: { id: segment.id }, body: { data } });
        navigate(`${BASE}/segments/${encodeURIComponent(segment.id)}`, true);
      } else {
        const r = await api.post('/v1/segments', { body: { data } });
        navigate(`${BASE}/segments/${encodeURIComponent(r.data.id)}`);
      }
    });
  };
  const del = () => act.run(async () => {
    await api.delete('/v1/segments/{id}', { params: { id: segment!.id } });
    navigate(`${BASE}/segments`);
  });
  return (
    <>
      <form onSubmit={save} class="segment">
        <label for="seg-name">Name</label>
        <input id="seg-name" required maxLength={200} readOnly={readOnly} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="seg-desc">Description</label>
        <input id="seg-desc" readOnly={readOnly} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        <label for="seg-match">Profiles match</label>
        <select id="seg-match" disabled={readOnly} value={match} onChange={(e) => setMatch(e.currentTarget.value as 'all' | 'any')}>
          <option value="all">all conditions</option><option value="any">any condition</option>
        </select>
        {drafts.map((d, i) => (
          <PredicateRow key={i} d={d} i={i} readOnly={readOnly}
            set={(x) => setDrafts(drafts.map((y, j) => (j === i ? x : y)))}
            remove={() => setDrafts(drafts.filter((_, j) => j !== i))} />
        ))}
        {admin ? (
          <p>
            <button type="button" onClick={() => setDrafts([...drafts, blank()])}>Add condition</button>{' '}
            <button type="submit" disabled={act.busy || !definition}>{segment ? 'Save changes' : 'Create segment'}</button>{' '}
            {segment ? (confirmDelete
              ? <><button type="button" class="danger" onClick={del}>Confirm delete</button> <button type="button" onClick={() => setConfirmDelete(false)}>Keep it</button></>
              : <button type="button" onClick={() => setConfirmDelete(true)}>Delete segment</button>) : null}
          </p>
        ) : null}
        <ErrorBox error={act.error} />
      </form>
      <Preview definition={definition} />
      {segment ? <details><summary>Stored definition</summary><Json value={segment.definition} /></details> : null}
    </>
  );
}

export function SegmentPage({ id }: { id?: string }) {
  useTitle(id ? `Segment ${id}` : 'New segment');
  const load = useLoad((signal) => id ? api.get('/v1/segments/{id}', { params: { id }, signal }).then((r) => r.data) : Promise.resolve(null), [id]);
  return (
    <>
      <p><Link href="/segments">← Segments</Link></p>
      <Loaded load={load}>{(s) => s === null ? (
        <><h1>New segment</h1><Editor /></>
      ) : (
        <>
          <h1>{s.name}</h1>
          <p><span data-testid="member-count">{s.memberCount}</span> members · updated <Time at={s.updatedAt} /> · environments {s.environments.join(', ')}</p>
          <Editor key={s.updatedAt} segment={s as S['SegmentWithCount']} />
          <Members id={s.id} />
        </>
      )}</Loaded>
    </>
  );
}
