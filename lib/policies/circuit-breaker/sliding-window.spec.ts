import fc from 'fast-check';
import { CountSlidingWindow, SlidingWindow, TimeSlidingWindow, createSlidingWindow } from './sliding-window';

function totals(w: SlidingWindow): number[] {
  return [w.totalCalls, w.failedCalls, w.slowCalls, w.slowFailedCalls, w.totalDurationMs];
}

describe('CountSlidingWindow', () => {
  it('keeps running totals of the last N calls', () => {
    const w = new CountSlidingWindow(3);
    w.record(0, 10, true, false);
    w.record(0, 20, true, true);
    w.record(0, 30, false, true);
    expect(totals(w)).toEqual([3, 2, 2, 1, 60]);
    w.record(0, 40, false, false);
    expect(totals(w)).toEqual([3, 1, 2, 1, 90]);
    w.record(0, 50, false, false);
    expect(totals(w)).toEqual([3, 0, 1, 0, 120]);
    w.clear();
    expect(totals(w)).toEqual([0, 0, 0, 0, 0]);
    w.record(0, 5, true, true);
    expect(totals(w)).toEqual([1, 1, 1, 1, 5]);
  });
});

describe('TimeSlidingWindow', () => {
  it('sums calls per epoch second and drops seconds that leave the window', () => {
    const w = new TimeSlidingWindow(3);
    w.record(0, 1, true, false);
    w.record(999, 2, false, true);
    w.record(1000, 4, true, true);
    w.record(2999, 8, false, false);
    expect(totals(w)).toEqual([4, 2, 2, 1, 15]);
    w.refresh(3000);
    expect(totals(w)).toEqual([2, 1, 1, 1, 12]);
    w.refresh(4000);
    expect(totals(w)).toEqual([1, 0, 0, 0, 8]);
    w.record(100_000, 16, false, false);
    expect(totals(w)).toEqual([1, 0, 0, 0, 16]);
  });

  it('counts a clock read behind its newest second in that second, without moving the window back', () => {
    const w = new TimeSlidingWindow(3);
    w.record(10_000, 1, true, false);
    w.record(9_000, 2, false, false);
    expect(totals(w)).toEqual([2, 1, 0, 0, 3]);
    w.refresh(12_999);
    expect(totals(w)).toEqual([2, 1, 0, 0, 3]);
    w.refresh(13_000);
    expect(totals(w)).toEqual([0, 0, 0, 0, 0]);
  });

  it('matches a naive list of timestamped calls for any sequence', () => {
    const step = fc.record({
      gapMs: fc.integer({ min: 0, max: 2500 }),
      durationMs: fc.integer({ min: 0, max: 5000 }),
      failed: fc.boolean(),
      slow: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 60 }), (size, steps) => {
        const w = createSlidingWindow('TIME_BASED', size);
        const calls: Array<{ second: number; durationMs: number; failed: boolean; slow: boolean }> = [];
        let now = 0;
        for (const s of steps) {
          now += s.gapMs;
          w.record(now, s.durationMs, s.failed, s.slow);
          calls.push({ second: Math.floor(now / 1000), durationMs: s.durationMs, failed: s.failed, slow: s.slow });
          const live = calls.filter((c) => c.second > Math.floor(now / 1000) - size);
          expect(totals(w)).toEqual([
            live.length,
            live.filter((c) => c.failed).length,
            live.filter((c) => c.slow).length,
            live.filter((c) => c.slow && c.failed).length,
            live.reduce((sum, c) => sum + c.durationMs, 0),
          ]);
        }
      }),
    );
  });
});
