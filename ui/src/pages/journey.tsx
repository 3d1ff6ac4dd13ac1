// One journey: what starts it (in words), its executions over time (entered, completed, failed,
// converted per hour or day), its conversion (journey-controls.tsx) and where the waiting ones wait,
// from GET /v1/journeys/{key}/metrics.
import { useState } from 'preact/hooks';
import { api, type S } from '../api';
import { Chart, COLORS, Stat } from '../chart';
import { Controls } from './journey-controls';
import { Link, Loaded, Time, useInterval, useLoad, useTitle } from '../lib';

/** "when `Signed Up` is tracked" / "when a profile enters segment Planners". */
export function TriggerWords({ trigger }: { trigger: S['Journey']['trigger'] }) {
  const segId = 'segment' in trigger ? trigger.segment : null;
  const seg = useLoad((signal) => segId
    ? api.get('/v1/segments/{id}', { params: { id: segId }, signal }).then((r) => r.data.name, () => null)
    : Promise.resolve(null), [segId]);
  if ('event' in trigger) return <span class="trigger">when <code>{trigger.event}</code> is tracked</span>;
  return (
    <span class="trigger">
      when a profile {trigger.on === 'entered' ? 'enters' : 'leaves'} segment{' '}
      <Link href={`/segments/${encodeURIComponent(trigger.segment)}`}>{seg.data ?? trigger.segment}</Link>
    </span>
  );
}

const STATS_MS = 10_000;

function Metrics({ journeyKey }: { journeyKey: string }) {
  const [bucket, setBucket] = useState<'hour' | 'day'>('hour');
  const load = useLoad((signal) => api.get('/v1/journeys/{key}/metrics', { params: { key: journeyKey }, query: { bucket }, signal }), [journeyKey, bucket]);
  useInterval(() => { if (!load.loading) load.reload(); }, STATS_MS);
  const execs = (status?: string) => `/executions?journey=${encodeURIComponent(journeyKey)}${status ? '&status=' + status : ''}`;
  const execsWhere = (q?: string) => `/executions?journey=${encodeURIComponent(journeyKey)}${q ? '&' + q : ''}`;
  return (
    <section aria-labelledby="m-h">
      <h2 id="m-h">Executions</h2>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label for="m-bucket">Over the last</label>
        <select id="m-bucket" value={bucket} onChange={(e) => setBucket(e.currentTarget.value as 'hour' | 'day')}>
          <option value="hour">24 hours, per hour</option><option value="day">30 days, per day</option>
        </select>
      </form>
      <Loaded load={load}>{({ data: m }) => {
        const steps = Object.entries(m.waitingBySteps).sort((a, b) => b[1] - a[1]);
        return (
          <>
            <div class="stats" data-testid="journey-totals">
              <Stat testid="total-entered" label="Entered" value={m.totals.entered} href={execs()} />
              <Stat testid="total-running" label="Running now" value={m.totals.running} href={execs('running')} />
              <Stat testid="total-waiting" label="Waiting now" value={m.totals.waiting} href={execs('waiting')} />
              <Stat testid="total-completed" label="Completed" value={m.totals.completed} href={execs('completed')} />
              <Stat testid="total-failed" label="Failed" value={m.totals.failed} href={execs('failed')} />
              <Stat testid="total-cancelled" label="Cancelled" value={m.totals.cancelled} href={execs('cancelled')} />
            </div>
            <Chart testid="journey-chart" title={`Per ${bucket}`} at={m.series.map((p) => p.at)} series={[
              { label: 'entered', color: COLORS[0]!, values: m.series.map((p) => p.entered) },
              { label: 'completed', color: COLORS[4]!, values: m.series.map((p) => p.completed) },
              { label: 'failed', color: COLORS[2]!, values: m.series.map((p) => p.failed) },
              { label: 'converted', color: COLORS[3]!, values: m.series.map((p) => p.converted) },
            ]} />
            <Controls m={m} execs={execsWhere} />
            {steps.length === 0 ? <p class="muted">No execution is waiting.</p> : (
              <Chart testid="waiting-chart" title="Where executions wait now" categories={steps.map(([k]) => k)} height={180}
                series={[{ label: 'waiting', color: COLORS[1]!, values: steps.map(([, n]) => n) }]} />
            )}
          </>
        );
      }}</Loaded>
    </section>
  );
}

export function JourneyPage({ journeyKey }: { journeyKey: string }) {
  useTitle(`Journey ${journeyKey}`);
  const load = useLoad((signal) => api.get('/v1/journeys/{key}', { params: { key: journeyKey }, signal }), [journeyKey]);
  return (
    <>
      <p><Link href="/journeys">← Journeys</Link></p>
      <h1>Journey <code>{journeyKey}</code></h1>
      <Loaded load={load}>{({ data: j }) => (
        <>
          <dl class="facts">
            <dt>Starts</dt><dd data-testid="trigger"><TriggerWords trigger={j.trigger} /></dd>
            <dt>Purpose</dt><dd>runs for profiles whose consent to <code>{j.purpose}</code> is true</dd>
            <dt>Enabled</dt><dd>{j.enabled ? 'yes' : 'no'}</dd>
            <dt>Version</dt><dd>{j.latestVersion ? <>{j.latestVersion.status}{j.latestVersion.error ? `: ${j.latestVersion.error}` : ''} (<Time at={j.latestVersion.createdAt} />)</> : '—'}</dd>
            <dt>App</dt><dd><code>{j.appId}</code></dd>
          </dl>
          <Metrics journeyKey={j.key} />
        </>
      )}</Loaded>
    </>
  );
}
