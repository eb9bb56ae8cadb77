import { BREAKER_REFERENCE, breakerChart, breakerTable, OUTAGE_CALLS, runBreaker } from './breaker';

describe('breaker scenario', () => {
  it('the breaker cuts the thread-seconds and the calls reaching the dead dependency by 8x or more', async () => {
    const result = await runBreaker();
    expect((result.none.threadMs / 1000).toFixed(1)).toBe(BREAKER_REFERENCE.none.threadSeconds.toFixed(1));
    expect(result.none.reachedInOutage).toBe(BREAKER_REFERENCE.none.reached);
    expect(result.breaker.threadMs * 8).toBeLessThanOrEqual(result.none.threadMs);
    expect(result.breaker.reachedInOutage * 8).toBeLessThanOrEqual(OUTAGE_CALLS);
    // The sequential reference model, recomputed, prints its published figures: 17.0 s and 7 calls.
    expect((result.reference.threadMs / 1000).toFixed(1)).toBe(BREAKER_REFERENCE.breaker.threadSeconds.toFixed(1));
    expect(result.reference.reachedInOutage).toBe(BREAKER_REFERENCE.breaker.reached);

    const printed = breakerTable(result);
    expect(printed).toMatch(/no breaker\s+603\.0\s+603\.0\s+300\/300\s+300\/300/);
    expect(printed).toMatch(/breaker\s+17\.0\s+\d+\.\d\s+7\/300\s+\d+\/300/);
    expect(breakerChart(result).match(/<polyline/g)).toHaveLength(2);
  });
});
