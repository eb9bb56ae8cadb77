import { VegasLimit } from './vegas-limit';

function vegas(): VegasLimit {
  return new VegasLimit({ initialLimit: 20, minLimit: 1, maxLimit: 1000, smoothing: 1 });
}

describe('VegasLimit', () => {
  it('takes a request dropped sooner than the no-load latency neither for that latency nor as a drop: its client left for time spent before the door', () => {
    const limit = vegas();
    limit.onBaseline(20, undefined);
    limit.onSample(2, 20, true);
    expect(limit.limit).toBe(20);
    // Still 20 ms of no-load latency: queue ⌈20 × (1 − 20/22)⌉ = 2, below α = 3, so it grows by 1.
    limit.onSample(22, 20, false);
    expect(limit.limit).toBe(21);
    // A drop after longer than that shrinks it.
    limit.onSample(25, 21, true);
    expect(limit.limit).toBe(20);
  });

  it('grows back from the limit a new no-load latency was measured under, when requests filled it, so it meets its sweet spot from below', () => {
    const limit = vegas();
    limit.onSample(20, 20, false);
    // No-load 20 ms, 30 ms measured: queue ⌈20 × (1 − 20/30)⌉ = 7, above β = 6.
    limit.onSample(30, 20, false);
    expect(limit.limit).toBe(19);
    limit.onBaseline(20, 9);
    expect(limit.limit).toBe(9);
    // No queue at the probe limit: it grows by β = 6.
    limit.onSample(20, 9, false);
    expect(limit.limit).toBe(15);
  });

  it('does not raise the limit again on the window after a raise, let in mostly under the lower limit, but shrinks on it', () => {
    const limit = vegas();
    limit.onBaseline(20, undefined);
    limit.onSample(20, 20, false);
    expect(limit.limit).toBe(26);
    limit.onSample(20, 26, false);
    expect(limit.limit).toBe(26);
    limit.onSample(20, 26, false);
    expect(limit.limit).toBe(32);
    // Queue ⌈32 × (1 − 20/40)⌉ = 16, above β = 6.
    limit.onSample(40, 32, false);
    expect(limit.limit).toBe(31);
  });

  it('keeps its limit after a new no-load latency measured under a lowered limit that requests never filled', () => {
    const limit = vegas();
    limit.onBaseline(20, undefined);
    expect(limit.limit).toBe(20);
  });
});
