import { BaselineLimit } from './adaptive-limit';
import { BaselineProbe } from './baseline-probe';

/** An algorithm whose limit the test sets, recording what it is fed. */
class RecordingLimit implements BaselineLimit {
  readonly samples: number[] = [];
  readonly baselines: number[] = [];
  readonly heldLimits: Array<number | undefined> = [];

  constructor(public limit: number) {}

  onSample(rttMs: number): void {
    this.samples.push(rttMs);
  }

  onBaseline(rttMs: number, heldLimit: number | undefined): void {
    this.baselines.push(rttMs);
    this.heldLimits.push(heldLimit);
  }
}

function probe(algorithm: RecordingLimit, minLimit = 1): BaselineProbe {
  return new BaselineProbe(algorithm, { windowSize: 4, probeMultiplier: 10, minLimit, random: () => 0 });
}

describe('BaselineProbe', () => {
  it('holds the limit at half for a window, then restores it and waits for the rest admitted within it before taking their average as the baseline', () => {
    const algorithm = new RecordingLimit(8);
    const p = probe(algorithm);
    expect(p.limit).toBe(4);
    // Admitted with more in flight than the probe allows: queued, neither a baseline nor a sample while holding.
    p.onSample(90, 5, false);
    for (const rtt of [10, 20, 30]) p.onSample(rtt, 4, false);
    expect(p.limit).toBe(4);
    p.onSample(40, 1, false);
    expect(p.limit).toBe(8);
    // Requests let in above the probe limit once it is lifted are ordinary samples.
    for (let i = 0; i < 4; i++) p.onSample(100, 9, false);
    expect(algorithm.samples).toEqual([100]);
    expect(algorithm.baselines).toEqual([]);
    // The longer ones admitted within the probe limit end later and count too.
    for (let i = 0; i < 4; i++) p.onSample(60, 3, false);
    expect(algorithm.baselines).toEqual([42.5]);
    expect(algorithm.samples).toEqual([100]);
  });

  it('never probes below minLimit, nor above the limit itself', () => {
    expect(probe(new RecordingLimit(20), 15).limit).toBe(15);
    const algorithm = new RecordingLimit(20);
    const p = probe(algorithm, 15);
    algorithm.limit = 12;
    expect(p.limit).toBe(12);
  });

  it('feeds the algorithm one average per window between probes, and probes again after probeMultiplier × limit windows (jittered)', () => {
    const algorithm = new RecordingLimit(6);
    const p = probe(algorithm);
    for (let i = 0; i < 7; i++) p.onSample(10, 1, false);
    expect(algorithm.baselines).toEqual([10]);
    // random() = 0: the next probe after 0.5 × 10 × limit 6 = 30 windows of 4, that is 120 samples.
    for (let i = 0; i < 119; i++) p.onSample(20, 6, false);
    expect(p.limit).toBe(6);
    expect(algorithm.samples).toHaveLength(29);
    p.onSample(20, 6, false);
    expect(algorithm.samples).toHaveLength(30);
    expect(p.limit).toBe(3);
    for (let i = 0; i < 7; i++) p.onSample(12, 3, false);
    expect(algorithm.baselines).toEqual([10, 12]);
    expect(p.limit).toBe(6);
  });

  it('tells the algorithm the limit it held when requests filled it, and none when they never did', () => {
    const filled = new RecordingLimit(8);
    const p = probe(filled);
    for (const inflight of [1, 4, 2, 3, 1, 2, 3, 2]) p.onSample(10, inflight, false);
    expect(filled.baselines).toEqual([10]);
    expect(filled.heldLimits).toEqual([4]);

    const idle = new RecordingLimit(8);
    const q = probe(idle);
    for (const inflight of [1, 3, 2, 3, 1, 2, 3, 2]) q.onSample(10, inflight, false);
    expect(idle.baselines).toEqual([10]);
    expect(idle.heldLimits).toEqual([undefined]);
  });

  it('leaves dropped requests out of the baseline, and ends a probe whose requests were all dropped without one', () => {
    const algorithm = new RecordingLimit(20);
    const p = probe(algorithm);
    p.onSample(5, 1, true);
    for (let i = 0; i < 13; i++) p.onSample(20, 1, false);
    expect(algorithm.baselines).toEqual([20]);

    const failing = new RecordingLimit(20);
    const q = probe(failing);
    for (let i = 0; i < 14; i++) q.onSample(5, 1, true);
    expect(failing.baselines).toEqual([]);
    expect(q.limit).toBe(20);
    q.onSample(5, 30, true);
    expect(failing.samples).toEqual([5]);
  });
});
