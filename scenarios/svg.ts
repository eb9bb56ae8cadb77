/*
 * A small hand-written SVG line chart, enough for the scenarios' "load over
 * time" figures without a charting dependency.
 */

/** One line of a chart. */
export interface Series {
  readonly label: string;
  /** `[x, y]` pairs in data units, in increasing x. */
  readonly points: ReadonlyArray<readonly [number, number]>;
  /** A CSS colour; a palette colour by default. */
  readonly color?: string;
  readonly dashed?: boolean;
}

/** A horizontal reference line, such as a capacity. */
export interface ReferenceLine {
  readonly y: number;
  readonly label: string;
}

/** A shaded span of x, such as the spike or the outage. */
export interface Band {
  readonly from: number;
  readonly to: number;
  readonly label: string;
}

/** What to draw. */
export interface ChartSpec {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly lines?: readonly ReferenceLine[];
  readonly bands?: readonly Band[];
  /** Top of the y axis; the data's maximum rounded up by default. */
  readonly yMax?: number;
  readonly width?: number;
  readonly height?: number;
}

const PALETTE = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const MARGIN = { top: 48, right: 24, bottom: 52, left: 72 };

/** Escapes text for an SVG text node or attribute. */
export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] as string,
  );
}

/** Tick positions from 0 to at least `max`, on a 1/2/5 × 10^k step, about `count` of them. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude;
  const ticks: number[] = [];
  for (let v = 0; v < max + step / 2 && ticks.length <= 2 * count + 2; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1] < max) ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)));
  return ticks;
}

const fmt = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** Renders `spec` as a standalone SVG document. */
export function lineChart(spec: ChartSpec): string {
  const width = spec.width ?? 900;
  const height = spec.height ?? 420 + 18 * Math.max(0, spec.series.length - 2);
  const plotW = width - MARGIN.left - MARGIN.right;
  const legendH = 18 * spec.series.length;
  const plotH = height - MARGIN.top - MARGIN.bottom - legendH - 10;

  const xs = spec.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = [...spec.series.flatMap((s) => s.points.map((p) => p[1])), ...(spec.lines ?? []).map((l) => l.y)];
  const xMin = Math.min(0, ...xs);
  const xTicks = niceTicks(Math.max(...xs, 1) - xMin, 10).map((t) => t + xMin);
  const xMax = xTicks[xTicks.length - 1];
  const yTicks = niceTicks(spec.yMax ?? Math.max(...ys, 1) * 1.05, 6); // headroom above the highest line
  const yMax = spec.yMax ?? yTicks[yTicks.length - 1];

  const px = (x: number): number => MARGIN.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const py = (y: number): number => MARGIN.top + plotH - (Math.min(y, yMax) / yMax) * plotH;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(spec.title)}</text>`,
  );
  for (const band of spec.bands ?? []) {
    const x1 = px(band.from);
    const x2 = px(band.to);
    out.push(
      `<rect x="${x1.toFixed(1)}" y="${MARGIN.top}" width="${(x2 - x1).toFixed(1)}" height="${plotH}" fill="#f2e6c9" opacity="0.7"/>`,
      `<text x="${((x1 + x2) / 2).toFixed(1)}" y="${MARGIN.top + 14}" text-anchor="middle" fill="#7a6a3a">${escapeXml(band.label)}</text>`,
    );
  }
  for (const t of yTicks.filter((v) => v <= yMax)) {
    const y = py(t).toFixed(1);
    out.push(
      `<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotW}" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${fmt(t)}</text>`,
    );
  }
  for (const t of xTicks) {
    const x = px(t).toFixed(1);
    out.push(
      `<line x1="${x}" y1="${MARGIN.top + plotH}" x2="${x}" y2="${MARGIN.top + plotH + 4}" stroke="#333"/>`,
      `<text x="${x}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${fmt(t)}</text>`,
    );
  }
  out.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="#333"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${MARGIN.top + plotH + 38}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`,
    `<text transform="translate(18 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`,
  );
  for (const line of spec.lines ?? []) {
    const y = py(line.y).toFixed(1);
    out.push(
      `<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotW}" y2="${y}" stroke="#555" stroke-dasharray="2 3"/>`,
      `<text x="${MARGIN.left + plotW - 4}" y="${(py(line.y) - 4).toFixed(1)}" text-anchor="end" fill="#555">${escapeXml(line.label)}</text>`,
    );
  }
  spec.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    const points = s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.8"${dash} points="${points}"/>`);
    const ly = MARGIN.top + plotH + MARGIN.bottom + 9 + 18 * i;
    out.push(
      `<line x1="${MARGIN.left}" y1="${ly}" x2="${MARGIN.left + 28}" y2="${ly}" stroke="${color}" stroke-width="2.5"${dash}/>`,
      `<text x="${MARGIN.left + 36}" y="${ly}" dominant-baseline="middle">${escapeXml(s.label)}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
