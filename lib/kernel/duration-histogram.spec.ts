import { DurationHistogram } from './duration-histogram';

describe('DurationHistogram', () => {
  it('counts a duration in the first bucket whose bound it does not exceed (Prometheus le), the rest in +Inf', () => {
    const histogram = new DurationHistogram(Float64Array.from([10, 100]));
    for (const durationMs of [0, 10, 10.5, 100, 101, 5000]) histogram.add(durationMs);
    expect([...histogram.counts]).toEqual([2, 2, 2]);
    expect(histogram.count).toBe(6);
    expect(histogram.sumMs).toBe(5221.5);
  });
});
