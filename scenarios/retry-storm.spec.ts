import { referenceModel, RETRY_STORM_DEFAULTS, retryStormChart, retryStormTable, runRetryStorm } from './retry-storm';

// Runs for many seconds on an idle machine: headroom for a busy one.
jest.setTimeout(120_000);

describe('retry-storm scenario', () => {
  it('the reference model prints its published figures over its 600 s', () => {
    const rows = [referenceModel(false, 0), referenceModel(true, 10), referenceModel(true, 0.1)].map((trace) => ({
      peak: Math.max(...trace),
      at150: trace[150],
      recovered: trace.findIndex((load, t) => t >= 120 && load <= 100),
    }));
    expect(rows).toEqual([
      { peak: 140, at150: 80, recovered: 120 },
      { peak: 1140, at150: 780, recovered: 218 },
      { peak: 150, at150: 80, recovered: 120 },
    ]);
  });

  it('on the real @Retry, the load follows the reference model second for second, and only the budget keeps the spike a spike', async () => {
    // 240 s holds every recovery (the last, with no ceiling at all, is at t=238) and keeps the test short.
    const result = await runRetryStorm({ seconds: 240 });
    const settings = { ...RETRY_STORM_DEFAULTS, seconds: 240 };
    const [none, unbudgeted, budgeted, unbounded] = result.rows;
    const spike = settings.spikeRate;

    expect(none.offered).toEqual(referenceModel(false, 0, settings));
    expect(unbudgeted.offered).toEqual(referenceModel(true, 10, settings));
    expect(budgeted.offered).toEqual(referenceModel(true, 0.1, settings));

    expect(none).toMatchObject({ peak: spike, at150: 80, recoveredAt: 120 });
    expect(budgeted.peak).toBeLessThanOrEqual(1.2 * spike);
    expect(budgeted.recoveredAt).toBe(120);
    expect(budgeted.metrics.budgetDenied).toBeGreaterThan(0);
    expect(unbudgeted.peak).toBeGreaterThanOrEqual(5 * spike);
    expect(unbudgeted).toMatchObject({ peak: 1140, at150: 780, recoveredAt: 218 });
    expect(unbudgeted.metrics.budgetDenied).toBe(0);
    // Without even the reference model's ceiling the storm is worse and lasts longer.
    expect(unbounded.peak).toBeGreaterThan(unbudgeted.peak);
    expect(unbounded.recoveredAt!).toBeGreaterThan(218);
    expect(unbounded.retriesDropped).toBe(0);

    const printed = retryStormTable(result);
    expect(printed).toMatch(/retry, no budget\s+1,140\s+1,140\s+780\s+780\s+t=218\s+t=218/);
    expect(printed).toMatch(/retry budget 10% of capacity\s+150\s+150\s+80\s+80\s+t=120\s+t=120/);
    expect(retryStormChart(result)).toContain('<polyline');
  });
});
