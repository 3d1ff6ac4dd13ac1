// The chart code, loaded on demand (import() from chart.tsx) so the first page's script stays small:
// uPlot draws time series and bars on a canvas. The instance is kept on its container as `uplot`,
// so a browser test can read back exactly what was drawn.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface PlotSpec {
  /** Bucket starts, epoch seconds (time axis), or category positions 0..n-1 with `categories`. */
  x: number[];
  series: Array<{ label: string; color: string; values: number[] }>;
  categories?: string[];
  width: number;
  height: number;
}

export function draw(el: HTMLElement, spec: PlotSpec): () => void {
  const bars = uPlot.paths.bars!({ size: [0.6, 60] });
  const cat = spec.categories;
  // Each point is a bucket's count, at the bucket's start; the current bucket is the last point.
  const width = spec.x.length > 1 ? spec.x[1]! - spec.x[0]! : 60;
  const last = spec.x[spec.x.length - 1] ?? 0;
  const u = new uPlot({
    width: spec.width,
    height: spec.height,
    scales: { x: cat ? { time: false, range: [-0.5, cat.length - 0.5] } : { time: true, range: [spec.x[0] ?? 0, last + width / 2] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    axes: [
      cat ? { values: (_u, splits) => splits.map((s) => cat[s] ?? ''), splits: () => cat.map((_, i) => i) } : {},
      { values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? String(s) : '')) },
    ],
    series: [
      {},
      ...spec.series.map((s) => ({ label: s.label, stroke: s.color, fill: cat ? s.color : undefined, width: 2, paths: cat ? bars : undefined, points: { show: !cat && spec.x.length <= 100, size: 5 } })),
    ],
    cursor: { drag: { x: false, y: false } },
  }, [spec.x, ...spec.series.map((s) => s.values)], el);
  (el as unknown as { uplot: uPlot }).uplot = u;
  return () => u.destroy();
}
