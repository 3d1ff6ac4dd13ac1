// The tracking plan: events and traits with their types and state, allow / deny in one click, the
// quarantine queue with promote and deny, and the ingestion policy switch (admin only).
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { ErrorBox, Loaded, Time, useAction, useIsAdmin, useLoad, useTitle } from '../lib';

/** Pages of a catalog list, with "more" following the cursor. */
function usePaged<T>(fetchPage: (cursor: string | undefined, signal: AbortSignal) => Promise<{ data: T[]; meta: S['Meta'] }>, deps: unknown[]) {
  const [extra, setExtra] = useState<{ items: T[]; cursor?: string | null }>({ items: [] });
  const first = useLoad(async (signal) => { setExtra({ items: [] }); return fetchPage(undefined, signal); }, deps);
  const cursor = extra.cursor === undefined ? first.data?.meta.nextCursor : extra.cursor;
  const more = cursor ? async () => {
    const r = await fetchPage(cursor, new AbortController().signal);
    setExtra((x) => ({ items: [...x.items, ...r.data], cursor: r.meta.nextCursor ?? null }));
  } : undefined;
  return { first, items: first.data ? [...first.data.data, ...extra.items] : [], more };
}

function StateButton({ kind, name, state, onDone }: { kind: 'events' | 'traits'; name: string; state: S['GovernanceState']; onDone: () => void }) {
  const act = useAction();
  const next = state === 'allowed' ? 'denied' : 'allowed';
  const click = () => act.run(async () => {
    const body = { data: { state: next } } as const;
    if (kind === 'events') await api.post('/v1/catalog/events/{name}/state', { params: { name }, body });
    else await api.post('/v1/catalog/traits/{name}/state', { params: { name }, body });
    onDone();
  });
  return (
    <>
      <button type="button" disabled={act.busy} onClick={click} aria-label={`${next === 'denied' ? 'Deny' : 'Allow'} ${name}`}>
        {next === 'denied' ? 'Deny' : 'Allow'}
      </button>
      <ErrorBox error={act.error} />
    </>
  );
}

function Policy({ admin }: { admin: boolean }) {
  const load = useLoad((signal) => api.get('/v1/settings', { signal }), []);
  const act = useAction();
  return (
    <section aria-labelledby="policy-h">
      <h2 id="policy-h">Ingestion policy</h2>
      <Loaded load={load}>{(r) => {
        const policy = r.data.ingestionPolicy;
        return (
          <p>
            Unknown names are <strong data-testid="policy">{policy === 'strict' ? 'held in quarantine (strict)' : 'registered as allowed (permissive)'}</strong>.{' '}
            {admin ? (
              <button type="button" disabled={act.busy} onClick={() => act.run(async () => {
                await api.patch('/v1/settings', { body: { data: { ingestionPolicy: policy === 'strict' ? 'permissive' : 'strict' } } });
                load.reload();
              })}>Switch to {policy === 'strict' ? 'permissive' : 'strict'}</button>
            ) : null}
          </p>
        );
      }}</Loaded>
      <ErrorBox error={act.error} />
    </section>
  );
}

function Quarantine({ admin, onChange }: { admin: boolean; onChange: () => void }) {
  const q = usePaged((cursor, signal) => api.get('/v1/catalog/quarantine', { query: { cursor, limit: 100 }, signal }), []);
  const act = useAction();
  const decide = (e: S['QuarantineEntry'], how: 'promote' | 'deny') => act.run(async () => {
    const body = { data: { kind: e.kind, name: e.name } };
    if (how === 'promote') await api.post('/v1/catalog/quarantine/promote', { body });
    else await api.post('/v1/catalog/quarantine/deny', { body });
    q.first.reload();
    onChange();
  });
  return (
    <section aria-labelledby="q-h">
      <h2 id="q-h">Quarantine</h2>
      <ErrorBox error={act.error} />
      <Loaded load={q.first}>{() => q.items.length === 0 ? <p class="muted">Nothing is held.</p> : (
        <table data-testid="quarantine">
          <thead><tr><th>Kind</th><th>Name</th><th>Held</th><th>First held</th><th>Last held</th>{admin ? <th>Decide</th> : null}</tr></thead>
          <tbody>
            {q.items.map((e) => (
              <tr key={e.kind + ':' + e.name}>
                <td>{e.kind}</td><td>{e.name}</td><td>{e.held}</td><td><Time at={e.firstHeldAt} /></td><td><Time at={e.lastHeldAt} /></td>
                {admin ? (
                  <td>
                    <button type="button" disabled={act.busy} onClick={() => decide(e, 'promote')} aria-label={`Promote ${e.kind} ${e.name}`}>Promote</button>{' '}
                    <button type="button" disabled={act.busy} onClick={() => decide(e, 'deny')} aria-label={`Deny held ${e.kind} ${e.name}`}>Deny</button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      )}</Loaded>
      {q.more ? <button type="button" onClick={q.more}>More</button> : null}
    </section>
  );
}

export function Catalog() {
  useTitle('Catalog');
  const admin = useIsAdmin();
  const events = usePaged((cursor, signal) => api.get('/v1/catalog/events', { query: { cursor, limit: 100 }, signal }), []);
  const traits = usePaged((cursor, signal) => api.get('/v1/catalog/traits', { query: { cursor, limit: 100 }, signal }), []);
  return (
    <>
      <h1>Catalog</h1>
      <Policy admin={admin} />
      <Quarantine admin={admin} onChange={() => { events.first.reload(); traits.first.reload(); }} />
      <section aria-labelledby="ev-h">
        <h2 id="ev-h">Events</h2>
        <Loaded load={events.first}>{() => events.items.length === 0 ? <p class="muted">No events yet.</p> : (
          <table data-testid="catalog-events">
            <thead><tr><th>Name</th><th>Properties</th><th>State</th>{admin ? <th>Change</th> : null}</tr></thead>
            <tbody>
              {events.items.map((e) => (
                <tr key={e.name} data-name={e.name}>
                  <td>{e.name}</td>
                  <td>{Object.entries(e.properties).map(([k, t]) => <span key={k} class="tag">{k}: {t}</span>)}</td>
                  <td class={`state-${e.state}`}>{e.state}</td>
                  {admin ? <td><StateButton kind="events" name={e.name} state={e.state} onDone={events.first.reload} /></td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        )}</Loaded>
        {events.more ? <button type="button" onClick={events.more}>More events</button> : null}
      </section>
      <section aria-labelledby="tr-h">
        <h2 id="tr-h">Traits</h2>
        <Loaded load={traits.first}>{() => traits.items.length === 0 ? <p class="muted">No traits yet.</p> : (
          <table data-testid="catalog-traits">
            <thead><tr><th>Name</th><th>Type</th><th>State</th>{admin ? <th>Change</th> : null}</tr></thead>
            <tbody>
              {traits.items.map((e) => (
                <tr key={e.name} data-name={e.name}>
                  <td>{e.name}</td><td>{e.type}</td><td class={`state-${e.state}`}>{e.state}</td>
                  {admin ? <td><StateButton kind="traits" name={e.name} state={e.state} onDone={traits.first.reload} /></td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        )}</Loaded>
        {traits.more ? <button type="button" onClick={traits.more}>More traits</button> : null}
      </section>
    </>
  );
}
