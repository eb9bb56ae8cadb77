import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main, SCENARIOS, selectScenarios, usage } from './index';

describe('scenario CLI', () => {
  it('dispatches on the name, `all` selects every scenario', () => {
    expect(SCENARIOS.map((s) => s.name)).toEqual([
      'retry-storm',
      'overcharge',
      'breaker',
      'fleet',
      'bulkhead',
      'overload',
      'adaptive-defaults',
      'retry-amplification',
      'hedging',
      'outbox',
    ]);
    expect(selectScenarios('all')).toBe(SCENARIOS);
    expect(selectScenarios('breaker')?.map((s) => s.name)).toEqual(['breaker']);
    expect(selectScenarios('nope')).toBeUndefined();
    for (const s of SCENARIOS) expect(usage()).toContain(s.name);
  });

  it('describes every scenario in docs/scenarios.md', () => {
    const doc = readFileSync(join(__dirname, '..', 'docs', 'scenarios.md'), 'utf8');
    const described = [...doc.matchAll(/^## (\S+)$/gm)].map((m) => m[1]);
    expect(described).toEqual(SCENARIOS.map((s) => s.name));
  });

  it('prints the usage and fails on an unknown name', async () => {
    const printed: string[] = [];
    await expect(main('nope', (t) => void printed.push(t))).resolves.toBe(1);
    expect(printed.join('\n')).toContain("unknown scenario 'nope'");
    await expect(main(undefined, (t) => void printed.push(t))).resolves.toBe(0);
  });

  it('prints the table and writes the chart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scenario-output-'));
    try {
      const printed: string[] = [];
      await expect(main('breaker', (t) => void printed.push(t), dir)).resolves.toBe(0);
      expect(printed.join('\n')).toMatch(/no breaker\s+603\.0/);
      const svg = join(dir, 'breaker.svg');
      expect(existsSync(svg)).toBe(true);
      expect(readFileSync(svg, 'utf8')).toContain('<svg');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
