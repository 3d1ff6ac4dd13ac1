// Sign in by pasting a session token (`headwater dashboard` prints a link that carries one).
import { useState } from 'preact/hooks';
import { api, session } from '../api';
import { BASE, ErrorBox, navigate, useAction, useTitle } from '../lib';

/** `notice`: why a login link did not sign in (expired, already used). */
export function Login({ notice }: { notice?: string | null }) {
  useTitle('Sign in');
  const [token, setToken] = useState('');
  const act = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const t = token.trim();
      session.set(t);
      try { await api.get('/v1/users/me'); } catch (err) { session.clear(); throw err; }
      navigate(BASE + '/');
    });
  };
  return (
    <section class="login">
      <h1>Sign in to headwater</h1>
      {notice ? <p class="error" role="alert" data-testid="login-link-error">The login link did not sign you in: {notice}. Ask for a new one (<code>headwater dashboard</code>).</p> : null}
      <p>Paste a session token (an <code>org:admin</code> or <code>org:member</code> session). It is kept in this tab's
        session storage only. <code>headwater dashboard --org ORG_ID</code> prints a single-use link, valid for 5 minutes, that signs in directly.</p>
      <form onSubmit={submit}>
        <label for="token">Session token</label>
        <textarea id="token" rows={4} required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        <button type="submit" disabled={act.busy}>Sign in</button>
      </form>
      <ErrorBox error={act.error} />
    </section>
  );
}
