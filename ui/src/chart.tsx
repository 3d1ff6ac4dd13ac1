// Charts: the canvas is drawn by uPlot, loaded on first use (plot.ts), so pages without a chart
// never download it. Each chart also has its numbers as a table (shown on request), for reading
// values exactly and for screen readers.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { PlotSpec } from './plot';
import { Link } from './lib';

export interface Series { label: string; color: string; values: number[] }

export const COLORS = ['#2f7de1', '#d08a00', '#b3261e', '#7a4fb5', '#1e6b35', '#5d6b7e'];

/** A time series chart over bucket starts (ISO strings) or a bar chart over named categories. */
export function Chart(props: { testid: string; title: string; at?: string[]; categories?: string[]; series: Series[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | undefined>();
  const x = props.categories ? props.categories.map((_, i) => i) : (props.at ?? []).map((a) => Date.parse(a) / 1000);
  const key = JSON.stringify([x, props.series, props.categories]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let destroy: (() => void) | undefined;
    let live = true;
    import('./plot').then(({ draw }) => {
      if (!live) return;
      const spec: PlotSpec = { x, series: props.series, categories: props.categories, width: Math.max(300, el.clientWidth || 600), height: props.height ?? 220 };
      destroy = draw(el, spec);
    }, (e: Error) => setError(e.message));
    return () => { live = false; destroy?.(); };
  }, [key]);
  const labels = props.categories ?? (props.at ?? []).map((a) => new Date(a).toLocaleString());
  const rows = labels.map((l, i) => ({ l, v: props.series.map((s) => s.values[i] ?? 0) })).filter((r) => r.v.some((n) => n > 0));
  return (
    <figure class="chart" data-testid={props.testid}>
      <figcaption>{props.title}</figcaption>
      {error ? <p class="error" role="alert">The chart could not be loaded: {error}</p> : null}
      <div ref={box} class="plot" aria-hidden="true" />
      <details>
        <summary>As a table ({rows.length} non-empty {props.categories ? 'rows' : 'buckets'})</summary>
        <table>
          <thead><tr><th>{props.categories ? 'Where' : 'From'}</th>{props.series.map((s) => <th key={s.label}>{s.label}</th>)}</tr></thead>
          <tbody>{rows.map((r) => <tr key={r.l}><td>{r.l}</td>{r.v.map((n, i) => <td key={i}>{n}</td>)}</tr>)}</tbody>
        </table>
      </details>
    </figure>
  );
}

/** A number that links to its page (`href` as for Link: without /ui). */
export function Stat({ label, value, href, detail, testid }: { label: string; value: string | number; href: string; detail?: string; testid: string }) {
  return (
    <Link class="stat" href={href} data-testid={testid}>
      <span class="stat-value">{value}</span>
      <span class="stat-label">{label}</span>
      {detail ? <span class="stat-detail">{detail}</span> : null}
    </Link>
  );
}
