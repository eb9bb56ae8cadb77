import {
  adaptiveDefaultsTable,
  bestFixedCap,
  overloadChart,
  overloadTable,
  runAdaptiveDefaults,
  OverloadRow,
  runOverload,
} from './overload';

// Runs for half a minute on an idle machine, several on a busy one: headroom against the timeout.
jest.setTimeout(300_000);

describe('overload scenario', () => {
  it('without shedding goodput collapses under 2× and 3× load; with shedding it holds ≥ 90% of capacity with a short p99 and critical requests served', async () => {
    const result = await runOverload();
    const row = (policy: string, load: number) => {
      const found = result.rows.find((r) => r.policy === policy && r.load === load);
      if (found === undefined) throw new Error(`no row ${policy} ${load}`);
      return found;
    };
    expect(result.capacity).toBe(200);
    expect(result.unloadedP99).toBeGreaterThan(140);
    expect(result.unloadedP99).toBeLessThan(150);

    // The collapse: everything is queued and served after its client has left.
    for (const load of [2, 3]) {
      expect(row('no shedding', load).goodputShare).toBeLessThan(10);
      expect(row('no shedding', load).admittedP99).toBeGreaterThan(result.settings.deadlineMs * 10);
      expect(row('no shedding', load).criticalSuccess).toBeLessThan(5);
      expect(row('no shedding', load).refused).toBe(0);
    }

    for (const policy of ['fixed cap 30', 'adaptive (gradient2)']) {
      const loaded = row(policy, 3);
      expect(loaded.goodputShare).toBeGreaterThanOrEqual(90);
      expect(loaded.admittedP99).toBeLessThanOrEqual(2 * result.unloadedP99);
      expect(loaded.criticalSuccess).toBeGreaterThanOrEqual(99);
      expect(loaded.refused).toBeGreaterThan(loaded.offered / 2);
      expect(row(policy, 2).goodputShare).toBeGreaterThanOrEqual(90);
    }

    expect(overloadTable(result)).toMatch(/fixed cap 30\s+3×\s+197\s+98\.3%/);
    expect(overloadChart(result).match(/<polyline/g)).toHaveLength(3);
  });
});

describe('adaptive limits with their defaults at 3× overload', () => {
  it('keep goodput within 5% of the best fixed cap and p99 within 1.3× of its, on a 20-worker and a 10-worker pool', async () => {
    const comparisons = await runAdaptiveDefaults();
    const ratios = comparisons.flatMap(({ pool, rows }) => {
      const best = bestFixedCap(rows);
      expect(best.goodputShare).toBeGreaterThan(95);
      return ['gradient2', 'vegas'].map((algorithm) => {
        const adaptive = rows.find((r) => r.policy === `${algorithm} (defaults)`) as OverloadRow;
        return {
          pool: `${pool.workers} × ${pool.serviceMs} ms`,
          algorithm,
          goodput: Number((adaptive.goodput / best.goodput).toFixed(3)),
          p99: Number((adaptive.admittedP99 / best.admittedP99).toFixed(2)),
        };
      });
    });
    expect(ratios.map((r) => `${r.pool} ${r.algorithm}`)).toEqual([
      '20 × 100 ms gradient2',
      '20 × 100 ms vegas',
      '10 × 20 ms gradient2',
      '10 × 20 ms vegas',
    ]);
    expect(ratios.filter((r) => r.goodput < 0.95 || r.p99 > 1.3)).toEqual([]);
    expect(adaptiveDefaultsTable(comparisons)).toMatch(/10 × 20 ms\s+fixed cap 13 \(best\)\s+499/);
  });
});
