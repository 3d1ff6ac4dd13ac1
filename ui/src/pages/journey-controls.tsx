// A journey's controls numbers on its page (docs/dashboard.md, "A journey's metrics"): the funnel
// entered -> completed -> converted, the treated executions' conversion against the holdout's with
// the lift, and each split's variants side by side. All from GET /v1/journeys/{key}/metrics.
import type { S } from '../api';
import { Chart, COLORS, Stat } from '../chart';

type M = S['JourneyMetrics'];

/** A share as a percentage with one decimal ("41.7 %"), or "—" when undefined. */
export const pct = (r: number | null | undefined) => (r === null || r === undefined ? '—' : `${(r * 100).toFixed(1)} %`);
/** A relative change, signed ("+12.5 %"), or "—". */
export const signedPct = (r: number | null | undefined) => (r === null || r === undefined ? '—' : `${r > 0 ? '+' : ''}${(r * 100).toFixed(1)} %`);

export function Controls({ m, execs }: { m: M; execs: (q?: string) => string }) {
  const t = m.totals;
  const splits = Object.entries(m.byVariant).sort((a, b) => a[0].localeCompare(b[0]));
  return (
    <section aria-labelledby="c-h">
      <h3 id="c-h">Conversion</h3>
      <Chart testid="funnel-chart" title="Funnel: entered, completed, converted" categories={['entered', 'completed', 'converted']} height={180}
        series={[{ label: 'executions', color: COLORS[0]!, values: [t.entered, t.completed, t.converted] }]} />
      <div class="stats" data-testid="conversion">
        <Stat testid="total-converted" label="Converted" value={t.converted} href={execs('converted=true')} detail={`${t.holdoutConverted} of them held out`} />
        <Stat testid="conversion-rate" label="Conversion" value={pct(m.conversionRate)} href={execs('holdout=false')}
          detail={`${t.converted - t.holdoutConverted} of ${t.entered - t.holdout} treated`} />
        <Stat testid="holdout-rate" label="Holdout conversion" value={pct(m.holdoutConversionRate)} href={execs('holdout=true')}
          detail={`${t.holdoutConverted} of ${t.holdout} held out`} />
        <Stat testid="lift" label="Lift" value={signedPct(m.lift)} href={execs('converted=true')} detail="over the holdout" />
        <Stat testid="total-exited" label="Exited" value={t.exited} href={execs()} detail="by an exit rule or goal" />
        <Stat testid="total-throttled" label="Throttled" value={t.throttled} href={execs()} detail="triggers skipped" />
        <Stat testid="total-capped" label="Capped" value={t.capped} href={execs()} detail="marketing e-mails refused" />
      </div>
      {splits.length === 0 ? <p class="muted">No split recorded.</p> : (
        <div class="variants">
          {splits.map(([split, variants]) => (
            <table key={split} data-testid={`split-${split}`}>
              <caption>Split <code>{split}</code></caption>
              <thead><tr><th>Variant</th><th>Entered</th><th>Converted</th><th>Conversion</th></tr></thead>
              <tbody>
                {Object.entries(variants).sort((a, b) => a[0].localeCompare(b[0])).map(([k, v]) => (
                  <tr key={k} data-variant={k}><td><code>{k}</code></td><td>{v.entered}</td><td>{v.converted}</td><td>{pct(v.conversionRate)}</td></tr>
                ))}
              </tbody>
            </table>
          ))}
        </div>
      )}
    </section>
  );
}
