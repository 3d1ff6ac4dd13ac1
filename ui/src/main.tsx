// The dashboard's entry: takes a `#token=` from the address (into session storage, out of the
// address bar and history), learns the caller's role, and routes /ui/* to its page.
import { render } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { api, session } from './api';
import { BASE, ErrorBox, Link, MeContext, navigate, useLoad, useLocation } from './lib';
import { Login } from './pages/login';
import { Overview } from './pages/overview';
import { Catalog } from './pages/catalog';
import { ProfileSearch, ProfilePage } from './pages/profiles';
import { SegmentList, SegmentPage } from './pages/segments';
import { Journeys } from './pages/journeys';
import { JourneyPage } from './pages/journey';
import { EmailList } from './pages/emails';
import { ExecutionList, ExecutionPage } from './pages/executions';
import { WebhookList, WebhookPage } from './pages/webhooks';
import { PrivacyPage } from './pages/privacy';
import './style.css';

function takeTokenFromHash() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  session.set(decodeURIComponent(m[1]!));
  history.replaceState(null, '', location.pathname + location.search);
}

/** A `#login=` link (`headwater dashboard`) is single-use and short-lived: traded for a session
 * before the first page loads, and out of the address bar either way. */
async function exchangeLoginFromHash(): Promise<string | null> {
  const m = /(?:^#|&)login=([^&]+)/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', location.pathname + location.search);
  session.clear();
  try {
    const r = await api.post('/v1/sessions/exchange', { body: { data: { loginToken: decodeURIComponent(m[1]!) } } });
    session.set(r.data.token);
    return null;
  } catch (err) {
    return (err as Error).message || 'the login link could not be used';
  }
}

const NAV: Array<[string, string]> = [
  ['/', 'Overview'], ['/catalog', 'Catalog'], ['/profiles', 'Profiles'], ['/segments', 'Segments'],
  ['/journeys', 'Journeys'], ['/executions', 'Executions'], ['/emails', 'E-mails'], ['/webhooks', 'Webhooks'], ['/privacy', 'Privacy'],
];

function Page({ path, query }: { path: string; query: URLSearchParams }) {
  let m: RegExpExecArray | null;
  if (path === '/') return <Overview />;
  if (path === '/catalog') return <Catalog />;
  if (path === '/profiles') return <ProfileSearch query={query} />;
  if ((m = /^\/profiles\/([^/]+)$/.exec(path))) return <ProfilePage id={decodeURIComponent(m[1]!)} />;
  if (path === '/segments') return <SegmentList />;
  if (path === '/segments/new') return <SegmentPage />;
  if ((m = /^\/segments\/([^/]+)$/.exec(path))) return <SegmentPage id={decodeURIComponent(m[1]!)} />;
  if (path === '/journeys') return <Journeys />;
  if ((m = /^\/journeys\/([^/]+)$/.exec(path))) return <JourneyPage journeyKey={decodeURIComponent(m[1]!)} />;
  if (path === '/emails') return <EmailList query={query} />;
  if (path === '/executions') return <ExecutionList query={query} />;
  if ((m = /^\/executions\/([^/]+)$/.exec(path))) return <ExecutionPage id={decodeURIComponent(m[1]!)} />;
  if (path === '/privacy') return <PrivacyPage query={query} />;
  if (path === '/webhooks') return <WebhookList />;
  if ((m = /^\/webhooks\/([^/]+)$/.exec(path))) return <WebhookPage id={decodeURIComponent(m[1]!)} />;
  return <p class="error" role="alert">No page at {BASE}{path}. <Link href="/">Go to the overview</Link>.</p>;
}

function Shell({ loginError }: { loginError: string | null }) {
  const { path, query } = useLocation();
  const token = session.get();
  const me = useLoad((signal) => token ? api.get('/v1/users/me', { signal }).then((r) => r.data) : Promise.resolve(null), [token]);
  if (path === '/login' || !token) return <main id="main"><Login notice={loginError} /></main>;
  const section = '/' + (path.split('/')[1] ?? '');
  // After an in-app navigation, keyboard and screen-reader users start at the new page's content.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    document.getElementById('main')?.focus();
  }, [path]);
  return (
    <MeContext.Provider value={me.data ?? null}>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <nav aria-label="Sections">
          <strong class="brand">headwater</strong>
          {NAV.map(([href, label]) => (
            <Link key={href} href={href} aria-current={section === href ? 'page' : undefined}>{label}</Link>
          ))}
        </nav>
        <div class="who">
          {me.data ? <span data-testid="role">{me.data.role ?? me.data.scheme} · {me.data.orgId}</span> : null}
          <button type="button" onClick={() => { session.clear(); navigate(BASE + '/login'); }}>Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {me.error ? <ErrorBox error={me.error} /> : me.data ? <Page path={path} query={query} /> : <p class="muted">Loading…</p>}
      </main>
    </MeContext.Provider>
  );
}

takeTokenFromHash();
void exchangeLoginFromHash().then((loginError) => render(<Shell loginError={loginError} />, document.getElementById('app')!));
