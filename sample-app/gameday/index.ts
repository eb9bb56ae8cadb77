import 'reflect-metadata';
import { PhaseRow, runGameDay, SCENARIOS } from './gameday';

const COLUMNS: ReadonlyArray<readonly [string, (row: PhaseRow) => string | number]> = [
  ['phase', (r) => r.phase],
  ['requests', (r) => r.requests],
  ['full pages', (r) => r.full],
  ['stale price', (r) => r.stalePrice],
  ['degraded parts', (r) => r.degradedParts],
  ['5xx', (r) => r.errors],
  ['/health', (r) => r.health],
  ['fallback check', (r) => r.fallbackCheck],
  ['fallback share %', (r) => r.fallbackShare],
  ['fallback answers', (r) => r.fallbackAnswers],
  ['stale answers', (r) => r.staleAnswers],
  ['injected faults', (r) => r.injectedFaults],
  ['rates breaker', (r) => r.ratesBreaker],
];

/** A markdown table of one scenario's phases. */
export function gameDayTable(rows: readonly PhaseRow[]): string {
  const cells = rows.map((row) => COLUMNS.map(([, cell]) => String(cell(row))));
  const widths = COLUMNS.map(([heading], i) => Math.max(heading.length, ...cells.map((c) => c[i].length)));
  const line = (values: readonly string[]) =>
    `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(COLUMNS.map(([h]) => h)), rule, ...cells.map(line)].join('\n');
}

/**
 * `npm run gameday` runs every scenario; `npm run gameday -- cache-empty`
 * the named ones. Progress goes to stderr, one table per scenario to stdout.
 */
async function main(args: readonly string[]): Promise<void> {
  const unknown = args.filter((a) => !SCENARIOS.some((s) => s.name === a));
  if (unknown.length > 0 || args.includes('--help')) {
    console.error(
      `usage: npm run gameday [-- <scenario>...]\nscenarios:\n${SCENARIOS.map((s) => `  ${s.name.padEnd(26)} ${s.summary}`).join('\n')}`,
    );
    if (unknown.length > 0) process.exitCode = 2;
    return;
  }
  const chosen = args.length === 0 ? SCENARIOS : SCENARIOS.filter((s) => args.includes(s.name));
  for (const scenario of chosen) {
    const rows = await runGameDay(scenario, (line) => console.error(`… ${line}`));
    console.log(`\n## ${scenario.name}: ${scenario.summary}\n\n${gameDayTable(rows)}`);
  }
}

if (require.main === module)
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
