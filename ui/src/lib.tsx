// Small shared pieces: the history router, data loading, the signed-in caller, and display helpers.
import { createContext, type ComponentChildren, type JSX } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type S } from './api';

export const BASE = '/ui';
const NAV_EVENT = 'hw:navigate';

export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, '', to); else history.pushState(null, '', to);
  dispatchEvent(new Event(NAV_EVENT));
}

/** The current path (without /ui) and query, re-rendered on every navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const read = () => ({ path: location.pathname.slice(BASE.length).replace(/\/+$/, '') || '/', search: location.search });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const on = () => setLoc(read());
    addEventListener('popstate', on);
    addEventListener(NAV_EVENT, on);
    return () => { removeEventListener('popstate', on); removeEventListener(NAV_EVENT, on); };
  }, []);
  return { path: loc.path, query: new URLSearchParams(loc.search) };
}

/** A real link (middle-click, copy address work); plain clicks navigate without reloading. */
export function Link(props: JSX.HTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const { href, ...rest } = props;
  const full = href.startsWith('/') ? BASE + href : href;
  const onClick = (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(full);
  };
  return <a {...rest} href={full} onClick={onClick} />;
}

export interface Load<T> { data?: T; error?: Error; loading: boolean; reload(): void }

/** Runs `fn` when `deps` change (aborting the previous run), and again on reload(). */
export function useLoad<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Load<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    setState((s) => ({ data: s.data, loading: true }));
    fn(ac.signal).then(
      (data) => { if (!ac.signal.aborted) setState({ data, loading: false }); },
      (error: Error) => { if (!ac.signal.aborted) setState({ error, loading: false }); },
    );
    return () => ac.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** Calls `fn` every `ms` while mounted. */
export function useInterval(fn: () => void, ms: number) {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => { const t = setInterval(() => ref.current(), ms); return () => clearInterval(t); }, [ms]);
}

/** A mutation's state: busy while running, its error shown by the caller. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true); setError(undefined);
    try { await fn(); } catch (e) { setError(e as Error); } finally { setBusy(false); }
  };
  return { busy, error, run };
}

export const MeContext = createContext<S['UsersMe'] | null>(null);
/** Whether the caller may change things (org:admin); members get no mutating control at all. */
export function useIsAdmin() { return useContext(MeContext)?.role === 'org:admin'; }

/** The API's own message (and code), never a blank page. */
export function ErrorBox({ error }: { error?: Error }) {
  if (!error) return null;
  const code = error instanceof ApiError ? error.code : 'error';
  return (
    <p class="error" role="alert">
      <strong>{code}</strong>: {error.message}
      {error instanceof ApiError && error.status === 401 ? <> (<Link href="/login">sign in again</Link>)</> : null}
    </p>
  );
}

/** Loading / error / content for one load. */
export function Loaded<T>({ load, children }: { load: Load<T>; children: (data: T) => ComponentChildren }) {
  if (load.error) return <ErrorBox error={load.error} />;
  if (load.data === undefined) return <p class="muted" aria-busy="true">Loading…</p>;
  return <>{children(load.data)}</>;
}

export function Time({ at }: { at?: string | null }) {
  if (!at) return <span class="muted">never</span>;
  const d = new Date(at);
  return <time dateTime={at} title={at}>{d.toLocaleString()}</time>;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function useTitle(title: string) {
  useEffect(() => { document.title = `${title} · headwater`; }, [title]);
}
