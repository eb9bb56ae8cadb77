import { VegasLimit } from './vegas-limit';

function vegas(): VegasLimit {
  return new VegasLimit({ initialLimit: 20, minLimit: 1, maxLimit: 1000, smoothing: 1 });
}

describe('VegasLimit', () => {
  it('takes a request dropped sooner than the no-load latency neither for that latency nor as a drop: its client left for time spent before the door', () => {
    const limit = vegas();
    limit.onBaseline(20);
    limit.onSample(2, 20, true);
    expect(limit.limit).toBe(20);
    // Still 20 ms of no-load latency: queue ⌈20 × (1 − 20/22)⌉ = 2, below α = 3, so it grows by 1.
    limit.onSample(22, 20, false);
    expect(limit.limit).toBe(21);
    // A drop after longer than that shrinks it.
    limit.onSample(25, 21, true);
    expect(limit.limit).toBe(20);
  });
});
