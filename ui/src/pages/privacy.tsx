// Privacy: on a profile page, export (NDJSON download) and erase with a confirmation that names the
// profile; the Privacy page lists erasures and suppressions (lifting one) and sets retention.
import { useState } from 'preact/hooks';
import { api, session, type S } from '../api';
import { ErrorBox, Loaded, Time, navigate, BASE, useAction, useIsAdmin, useLoad, useTitle } from '../lib';

type Erasure = S['Erasure'];
const KINDS = ['events', 'executions', 'emails', 'webhookDeliveries', 'rejections'] as const;
const LABEL: Record<typeof KINDS[number], string> = {
  events: 'Events', executions: 'Executions (ended)', emails: 'E-mails', webhookDeliveries: 'Webhook deliveries', rejections: 'Segment rejections',
};

/** Export and erase controls of one profile (admins only: members see nothing). */
export function ProfilePrivacy({ id }: { id: string }) {
  const admin = useIsAdmin();
  const act = useAction();
  const [confirming, setConfirming] = useState(false);
  const [typed, setTyped] = useState('');
  const [suppress, setSuppress] = useState(true);
  if (!admin) return null;
  const download = () => act.run(async () => {
    const res = await fetch(`/v1/profiles/${encodeURIComponent(id)}/export`, { headers: { authorization: `Bearer ${session.get()}` } });
    if (!res.ok) throw new Error(`export failed: HTTP ${res.status}`);
    const a = document.createElement('a');
    a.href = URL.createObjectURL(await res.blob());
    a.download = `profile-${id}.ndjson`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  });
  const erase = () => act.run(async () => {
    const r = await api.post('/v1/profiles/{id}/erase', { params: { id }, body: { data: { suppress } } }) as unknown as { data: Erasure };
    navigate(`${BASE}/privacy?erasure=${encodeURIComponent(r.data.id)}`);
  });
  return (
    <section aria-labelledby="priv-h">
      <h2 id="priv-h">Privacy</h2>
      <p>
        <button type="button" disabled={act.busy} onClick={download}>Export (NDJSON)</button>{' '}
        {confirming ? null : <button type="button" class="danger" onClick={() => setConfirming(true)}>Erase…</button>}
      </p>
      {confirming ? (
        <form class="confirm" onSubmit={(e) => { e.preventDefault(); if (typed === id) erase(); }}>
          <p role="alert">Erasing removes profile <code>{id}</code>, the profiles merged into it, their events, executions, memberships and the bodies of their e-mails and webhook deliveries. It cannot be undone.</p>
          <label><input type="checkbox" checked={suppress} onChange={(e) => setSuppress(e.currentTarget.checked)} /> Suppress its identifiers (refuse future writes carrying them)</label>
          <label for="erase-confirm">Type the profile id <code>{id}</code> to confirm</label>
          <input id="erase-confirm" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autoComplete="off" />
          <button type="submit" class="danger" disabled={typed !== id || act.busy}>Erase {id}</button>{' '}
          <button type="button" onClick={() => { setConfirming(false); setTyped(''); }}>Cancel</button>
        </form>
      ) : null}
      <ErrorBox error={act.error} />
    </section>
  );
}

function Retention() {
  const admin = useIsAdmin();
  const load = useLoad((signal) => api.get('/v1/settings', { signal }), []);
  const act = useAction();
  const [draft, setDraft] = useState<Record<string, string>>({});
  return (
    <section aria-labelledby="ret-h">
      <h2 id="ret-h">Retention</h2>
      <Loaded load={load}>{(r) => {
        const cur = r.data.retention;
        const value = (k: typeof KINDS[number]) => draft[k] ?? (cur[k] === null ? '' : String(cur[k]));
        const save = (e: Event) => {
          e.preventDefault();
          const retention: Record<string, number | null> = {};
          for (const k of KINDS) if (k in draft) retention[k] = draft[k]!.trim() === '' ? null : Number(draft[k]);
          act.run(async () => { await api.patch('/v1/settings', { body: { data: { retention } as any } }); setDraft({}); load.reload(); });
        };
        return (
          <form onSubmit={save} data-testid="retention">
            <table>
              <thead><tr><th>Kind</th><th>Days kept (empty: forever)</th></tr></thead>
              <tbody>
                {KINDS.map((k) => (
                  <tr key={k}>
                    <td><label for={`ret-${k}`}>{LABEL[k]}</label></td>
                    <td><input id={`ret-${k}`} type="number" min={1} max={3650} disabled={!admin} value={value(k)}
                      onInput={(e) => setDraft({ ...draft, [k]: e.currentTarget.value })} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
            {admin ? <button type="submit" disabled={act.busy || Object.keys(draft).length === 0}>Save retention</button> : null}
          </form>
        );
      }}</Loaded>
      <ErrorBox error={act.error} />
    </section>
  );
}

export function PrivacyPage({ query }: { query: URLSearchParams }) {
  useTitle('Privacy');
  const admin = useIsAdmin();
  const erasures = useLoad((signal) => api.get('/v1/erasures', { query: { limit: 100 }, signal }), []);
  const sups = useLoad((signal) => api.get('/v1/suppressions', { query: { limit: 100 }, signal }), []);
  const act = useAction();
  const highlight = query.get('erasure');
  return (
    <>
      <h1>Privacy</h1>
      <section aria-labelledby="er-h">
        <h2 id="er-h">Erasures <button type="button" onClick={erasures.reload}>Refresh</button></h2>
        <Loaded load={erasures}>{(r) => r.data.length === 0 ? <p class="muted">No erasure yet. Erase a profile from its page.</p> : (
          <table data-testid="erasures">
            <thead><tr><th>Erasure</th><th>Profile</th><th>Status</th><th>Suppressed</th><th>Requested</th><th>Completed</th></tr></thead>
            <tbody>
              {r.data.map((e) => (
                <tr key={e.id} class={e.id === highlight ? 'current' : undefined}>
                  <td><code>{e.id}</code></td><td><code>{e.profileId}</code></td><td>{e.status}</td><td>{e.suppress ? 'yes' : 'no'}</td>
                  <td><Time at={e.requestedAt} /></td><td><Time at={e.completedAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}</Loaded>
      </section>
      <section aria-labelledby="sup-h">
        <h2 id="sup-h">Suppressed identifiers</h2>
        <p class="muted">Writes carrying one of these are refused. Only the sha256 of each value is kept.</p>
        <Loaded load={sups}>{(r) => r.data.length === 0 ? <p class="muted">None.</p> : (
          <table data-testid="suppressions">
            <thead><tr><th>Kind</th><th>sha256</th><th>Since</th>{admin ? <th /> : null}</tr></thead>
            <tbody>
              {r.data.map((x) => (
                <tr key={x.id}>
                  <td>{x.kind}</td><td><code>{x.hash}</code></td><td><Time at={x.createdAt} /></td>
                  {admin ? <td><button type="button" disabled={act.busy} onClick={() => act.run(async () => {
                    await api.delete('/v1/suppressions/{id}', { params: { id: x.id } }); sups.reload();
                  })}>Lift</button></td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        )}</Loaded>
        <ErrorBox error={act.error} />
      </section>
      <Retention />
    </>
  );
}
