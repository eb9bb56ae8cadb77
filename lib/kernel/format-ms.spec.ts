import { TimeoutExceededError } from './errors';
import { formatMs, roundMs } from './format-ms';
import { BREAKER_TRANSITION, BUDGET_RECOVERED, BULKHEAD_RECOVERED } from '../observability/observability.messages';

describe('durations as printed', () => {
  it('are whole milliseconds from 10 ms up, tenths below', () => {
    expect(formatMs(105.37551499999972)).toBe('105');
    expect(formatMs(9.96)).toBe('10');
    expect(formatMs(2.349)).toBe('2.3');
    expect(formatMs(0)).toBe('0');
    expect(formatMs(Number.POSITIVE_INFINITY)).toBe('Infinity');
  });

  it('in events are rounded to the microsecond', () => {
    expect(roundMs(105.37551499999972)).toBe(105.376);
    expect(roundMs(3)).toBe(3);
  });

  it('appear rounded in error messages and logs', () => {
    expect(new TimeoutExceededError('pricing', 105.37551499999972).message).toBe(
      "TimeLimiter 'pricing' recorded a call that exceeded 105ms",
    );
    expect(new TimeoutExceededError('pricing', 105.37551499999972).timeoutMs).toBe(105.37551499999972);
    expect(BUDGET_RECOVERED('r', 3, 1234.5678)).toContain('over 1235 ms');
    expect(BULKHEAD_RECOVERED('b', 3, 0.25)).toContain('over 0.3 ms');
    const opening = { failureRate: 50, slowCallRate: 0, numberOfBufferedCalls: 4 } as never;
    expect(BREAKER_TRANSITION('cb', 'CLOSED', 'OPEN', opening, 9999.999)).toContain('refused for 10000 ms');
  });
});
