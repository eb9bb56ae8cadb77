import { cpus, loadavg } from 'node:os';

/** A column of a printed table: its heading and how its cells align. */
export interface Column {
  readonly heading: string;
  readonly align?: 'left' | 'right';
}

/** Prints a plain-text table (markdown-compatible, so it can be pasted into an issue as is). */
export function printTable(columns: readonly Column[], rows: readonly (readonly string[])[]): void {
  const widths = columns.map((c, i) => Math.max(c.heading.length, ...rows.map((r) => r[i].length)));
  const cell = (text: string, i: number): string =>
    columns[i].align === 'left' ? text.padEnd(widths[i]) : text.padStart(widths[i]);
  const line = (cells: readonly string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  console.log(line(columns.map((c) => c.heading)));
  console.log(
    `|${widths.map((w, i) => (columns[i].align === 'left' ? ':' : '-') + '-'.repeat(w) + (columns[i].align === 'left' ? '-' : ':')).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));
}

/** A section heading. */
export function printHeading(title: string): void {
  console.log(`\n## ${title}\n`);
}

/** `1234.5` → `"1,235"`. */
export function ns(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** `0.0312` → `"3.1%"`: a round-to-round spread. */
export function spread(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}

/** `12.345` → `"12.3×"`. */
export function times(ratio: number): string {
  return `${ratio.toFixed(ratio < 10 ? 2 : 1)}×`;
}

/** One line stating a target, the measured figure and whether it is met. */
export function verdict(target: string, measured: string, met: boolean): string {
  return `- ${target}: ${measured} → ${met ? 'met' : 'NOT met'}`;
}

/** The machine and runtime the figures come from. */
export function printEnvironment(): void {
  const cpu = cpus();
  const [one, five] = loadavg();
  console.log('# resilience4nest bench');
  console.log('');
  console.log(`node ${process.version} (V8 ${process.versions.v8}) on ${process.platform}/${process.arch}`);
  console.log(
    `CPU: ${cpu[0]?.model.trim() ?? 'unknown'} × ${cpu.length}; load average ${one.toFixed(2)} (1 min), ${five.toFixed(2)} (5 min)`,
  );
  console.log(
    `gc exposed: ${typeof (globalThis as { gc?: unknown }).gc === 'function' ? 'yes (--expose-gc)' : 'no (enabled at run time)'}`,
  );
  console.log(
    `clock: one performance.now() read costs ${clockReadNs().toFixed(0)} ns here (a call through the full stack reads ` +
      'it twice; docs/performance.md was measured where it cost 44 ns)',
  );
}

/** What one `performance.now()` read costs, median of five rounds: a system call on some hosts, which the stacks pay per call. */
function clockReadNs(): number {
  const perf = performance;
  const reads = 100_000;
  const rounds: number[] = [];
  let sink = 0;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < reads; i++) sink += perf.now();
    rounds.push(Number(process.hrtime.bigint() - start) / reads);
  }
  if (Number.isNaN(sink)) throw new Error('the clock answered NaN');
  return rounds.sort((a, b) => a - b)[2];
}
