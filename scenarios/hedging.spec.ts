import { hedgingChart, hedgingTable, runHedging } from './hedging';

describe('hedging scenario', () => {
  it('a hedge at the p95 cuts the p99 and p99.9 for about 5% more calls; under overload the budget holds it to 10%', async () => {
    const calls = 10_000;
    const result = await runHedging({ calls });
    const [plain, hedged, twice, overloaded, unbounded, budgeted] = result.rows;
    // Healthy: the slow tail (10x the median) sets the caller's p99 and p99.9 without hedging.
    expect(plain.p99Ms).toBeGreaterThan(80);
    expect(plain.extraLoadPercent).toBe(0);
    expect(hedged.p99Ms).toBeLessThan(plain.p99Ms / 2);
    expect(hedged.p50Ms).toBeCloseTo(plain.p50Ms, 0);
    expect(hedged.extraLoadPercent).toBeGreaterThan(3);
    expect(hedged.extraLoadPercent).toBeLessThan(8);
    expect(hedged.budgetDenied).toBe(0);
    // One hedge leaves the calls whose two attempts were both slow (0.25%): a second one cuts the p99.9 too.
    expect(twice.p999Ms).toBeLessThan(plain.p999Ms * 0.6);
    expect(twice.p999Ms).toBeLessThan(hedged.p999Ms * 0.85);
    expect(twice.extraLoadPercent).toBeLessThan(8);
    // Overloaded, half the calls slow: hedging without a budget adds about half the calls again.
    expect(overloaded.extraLoadPercent).toBe(0);
    expect(unbounded.extraLoadPercent).toBeGreaterThan(40);
    // The 10% budget: one token per ten successes, plus the 5 it starts with.
    expect(budgeted.extraLoadPercent).toBeGreaterThan(9);
    expect(budgeted.extraLoadPercent).toBeLessThanOrEqual(10 + (5 / calls) * 100);
    expect(budgeted.budgetDenied).toBeGreaterThan(0);
    expect(hedgingTable(result)).toMatch(/healthy, hedge at p95 +10\.\d ms/);
    expect(hedgingChart(result).match(/<polyline/g)).toHaveLength(3);
  });
});
