// The org in numbers (each linking to its page), track calls of the last 24 hours by outcome as a
// chart, apps with their sources and when each last received data, and a live tail of the newest events.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Chart, COLORS, Stat } from '../chart';
import { Link, Loaded, Time, useInterval, useLoad, useTitle } from '../lib';

const TAIL_MS = 2000;
const STATS_MS = 10_000;
const OUTCOMES = ['accepted', 'quarantined', 'denied', 'rejected'] as const;

const pct = (r: number | null) => r === null ? 'no failures possible yet' : `${(r * 100).toFixed(r > 0 && r < 0.01 ? 2 : 0)}% failed`;

function Numbers() {
  const load = useLoad((signal) => api.get('/v1/stats/summary', { signal }), []);
  useInterval(() => { if (!load.loading) load.reload(); }, STATS_MS);
  return (
    <Loaded load={load}>{({ data: s }) => (
      <div class="stats">
        <Stat testid="stat-profiles" label="Profiles" value={s.profiles} href="/profiles" />
        <Stat testid="stat-segments" label="Segments" value={s.segments} href="/segments" />
        <Stat testid="stat-journeys" label="Journeys running" value={s.journeys.enabled} detail={`of ${s.journeys.total}`} href="/journeys" />
        <Stat testid="stat-executions" label="Executions active" value={s.executions.running + s.executions.waiting} detail={`${s.executions.running} running, ${s.executions.waiting} waiting`} href="/executions?status=waiting" />
        <Stat testid="stat-emails" label="E-mails (24 h)" value={s.emails.total} detail={pct(s.emails.failureRate)} href="/emails" />
        <Stat testid="stat-webhooks" label="Webhook deliveries (24 h)" value={s.webhookDeliveries.total} detail={pct(s.webhookDeliveries.failureRate)} href="/webhooks" />
      </div>
    )}</Loaded>
  );
}

function EventsChart() {
  const [bucket, setBucket] = useState<'minute' | 'hour'>('hour');
  const load = useLoad((signal) => api.get('/v1/stats/events', { query: { bucket }, signal }), [bucket]);
  useInterval(() => { if (!load.loading) load.reload(); }, STATS_MS);
  return (
    <section aria-labelledby="calls-h">
      <h2 id="calls-h">Track calls, last 24 hours</h2>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label for="bucket">Per</label>
        <select id="bucket" value={bucket} onChange={(e) => setBucket(e.currentTarget.value as 'minute' | 'hour')}>
          <option value="minute">minute</option><option value="hour">hour</option>
        </select>
      </form>
      <Loaded load={load}>{({ data: d }) => (
        <>
          <p data-testid="events-totals">{OUTCOMES.map((o) => <span key={o} class="tag">{o}: <strong data-outcome={o}>{d.totals[o]}</strong></span>)}</p>
          <Chart testid="events-chart" title={`Track calls per ${d.bucket}`} at={d.series.map((p) => p.at)}
            series={OUTCOMES.map((o, i) => ({ label: o, color: COLORS[i]!, values: d.series.map((p) => p[o]) }))} />
        </>
      )}</Loaded>
    </section>
  );
}

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
      <Numbers />
      <EventsChart />
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
