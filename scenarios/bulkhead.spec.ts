import { bulkheadChart, bulkheadTable, runBulkhead } from './bulkhead';

// Runs for many seconds on an idle machine: headroom for a busy one.
jest.setTimeout(120_000);

describe('bulkhead scenario', () => {
  it('without a bulkhead a slow reviews call stalls every endpoint; with 40 the others keep answering', async () => {
    const result = await runBulkhead();
    const { none, guarded } = result;

    // Reviews wants 240 workers and gets all 200: the other endpoints queue behind it.
    expect(none.maxWorkersOnReviews).toBe(200);
    expect(none.others.successRate).toBeLessThanOrEqual(25);
    expect(none.others.p99).toBeGreaterThan(5000);
    expect(none.maxQueued).toBeGreaterThan(1000);

    // With the bulkhead: at most 40 workers on reviews, the others answer in their 20 ms.
    expect(guarded.maxWorkersOnReviews).toBeLessThanOrEqual(40);
    expect(guarded.others.successRate).toBeGreaterThanOrEqual(99);
    expect(guarded.others.p99).toBeLessThanOrEqual(50);
    expect(guarded.maxQueued).toBe(0);
    // The pages refused a permit are served at once, without reviews.
    expect(guarded.bulkheadRejected).toBe(guarded.pages.withoutReviews);
    expect(guarded.pages.withoutReviews).toBeGreaterThan(guarded.pages.withReviews);
    expect(guarded.pages.withReviews + guarded.pages.withoutReviews).toBe(guarded.pages.requests);

    expect(bulkheadTable(result)).toMatch(/bulkhead of 40 on reviews\s+40\s+100\.0%\s+20 ms\s+20 ms/);
    expect(bulkheadChart(result).match(/<polyline/g)).toHaveLength(4);
  });

  it('is deterministic: the seeded arrivals give the same table on every run', async () => {
    const settings = { runMs: 15_000, slowFromMs: 5000 };
    expect(bulkheadTable(await runBulkhead(settings))).toBe(bulkheadTable(await runBulkhead(settings)));
  });
});
