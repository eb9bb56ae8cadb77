import { retryAmplificationChart, retryAmplificationTable, runRetryAmplification } from './retry-amplification';

describe('retry-amplification scenario', () => {
  it('three layers of 3 attempts make 27 calls per request; one budgeted layer makes about one', async () => {
    const result = await runRetryAmplification();
    const [three, two, one, budgeted] = result.rows;
    expect(three).toMatchObject({ callsPerRequest: 27, maxCallsPerRequest: 27 });
    expect(two).toMatchObject({ callsPerRequest: 8, maxCallsPerRequest: 8 });
    expect(one).toMatchObject({ callsPerRequest: 3, maxCallsPerRequest: 3 });
    expect(budgeted.callsPerRequest).toBeGreaterThanOrEqual(1);
    expect(budgeted.callsPerRequest).toBeLessThanOrEqual(1.1);
    expect(budgeted.budgetDenied).toBeGreaterThan(0);
    for (const row of result.rows) {
      expect(row.requests).toBeGreaterThan(500);
      expect(row.healthyFailures).toBe(0);
    }
    expect(retryAmplificationTable(result)).toMatch(/every layer, 3 attempts\s+27\s+27\s+27/);
    expect(retryAmplificationChart(result).match(/<polyline/g)).toHaveLength(4);
  });
});
