import { VirtualClock } from '../../lib/kernel/clock';
import { CircuitBreakerPolicy } from '../../lib/policies/circuit-breaker/circuit-breaker.policy';
import {
  CIRCUIT_BREAKER_SCHEMA,
  CircuitBreakerConfig,
} from '../../lib/policies/circuit-breaker/circuit-breaker.config';
import { INVALID_VALUE } from '../../lib/config/config.messages';
import { resolveSection } from '../../lib/config/schema';
import { backoffDelay } from '../../lib/policies/retry/backoff';
import { RETRY_SCHEMA, RetryConfig } from '../../lib/policies/retry/retry.config';
import { mulberry32 } from '../../scenarios/kit';

/*
 * Port of Resilience4j's IntervalFunctionTest (resilience4j-core/src/test/java/io/github/resilience4j/core/).
 * Resilience4j builds interval functions in code; here they come from the retry's and the
 * breaker's configuration (as its Spring properties build them), so the "reject"/"pass" cases
 * become startup validation and the "generates" cases run the retry's backoff and the breaker's
 * open-state wait. Each case names the Java test it mirrors; randomness comes from a seeded PRNG.
 *
 * Cases not ported:
 * | Java test method                 | why                                                                           |
 * |----------------------------------|-------------------------------------------------------------------------------|
 * | shouldRejectAttemptLessThenOne   | attempts are counted internally from 1; no caller can pass 0                  |
 * | shouldPassAttemptGreaterThenZero | same: covered by every "generates" case below, which starts at attempt 1     |
 */

const retryConfig = (overrides: Partial<RetryConfig>): RetryConfig => ({
  ...RETRY_SCHEMA.defaults,
  jitter: 'none',
  ...overrides,
});
const noWarnings = (): void => undefined;
const resolveRetry = (settings: Record<string, unknown>) => () =>
  resolveSection(RETRY_SCHEMA, { instances: { r: settings } }, noWarnings);
const resolveBreaker = (settings: Record<string, unknown>) => () =>
  resolveSection(CIRCUIT_BREAKER_SCHEMA, { instances: { cb: settings } }, noWarnings);
const retryPlace = "retry instance 'r'";
const breakerPlace = "circuitBreaker instance 'cb'";

/** The waits of `attempts` consecutive retries. */
function retryWaits(config: RetryConfig, attempts: number, random: () => number = mulberry32(7)): number[] {
  return Array.from({ length: attempts }, (_, i) => backoffDelay(config, i + 1, 0, random));
}

/** The waits of `opens` consecutive OPEN states of a breaker (each re-opened by hand, as Java's test does). */
function openWaits(overrides: Partial<CircuitBreakerConfig>, opens: number): number[] {
  const cb = new CircuitBreakerPolicy(
    'cb',
    { ...CIRCUIT_BREAKER_SCHEMA.defaults, ...overrides },
    new VirtualClock(),
    mulberry32(11),
  );
  return Array.from({ length: opens }, () => {
    cb.transitionToOpenState();
    return cb.openWaitMs;
  });
}

describe('Resilience4j IntervalFunctionTest, ported', () => {
  describe('shouldRejectNonPositiveDuration', () => {
    it.each<[string, () => unknown, string]>([
      [
        "the retry's exponential cap of 0 (ofExponentialBackoff(100, 1, 0))",
        resolveRetry({ enableExponentialBackoff: true, exponentialMaxWaitDuration: 0 }),
        INVALID_VALUE(retryPlace, 'exponentialMaxWaitDuration', 'a positive duration', 0),
      ],
      [
        "the retry's randomized exponential cap of 0 (ofExponentialRandomBackoff(100, 1, 0))",
        resolveRetry({ enableExponentialBackoff: true, enableRandomizedWait: true, exponentialMaxWaitDuration: '0ms' }),
        INVALID_VALUE(retryPlace, 'exponentialMaxWaitDuration', 'a positive duration', '0ms'),
      ],
      [
        'a negative retry cap (ofExponentialBackoff(100, 1, -1))',
        resolveRetry({ exponentialMaxWaitDuration: -1 }),
        INVALID_VALUE(
          retryPlace,
          'exponentialMaxWaitDuration',
          'a non-negative duration (ms number or "250ms", "2s", "1m", "24h")',
          -1,
        ),
      ],
      [
        "the breaker's open wait of 0 (IntervalFunction.of(0))",
        resolveBreaker({ waitDurationInOpenState: 0 }),
        INVALID_VALUE(breakerPlace, 'waitDurationInOpenState', 'a positive duration', 0),
      ],
      [
        "the breaker's exponential cap of 0",
        resolveBreaker({ enableExponentialBackoff: true, exponentialMaxWaitDurationInOpenState: 0 }),
        INVALID_VALUE(breakerPlace, 'exponentialMaxWaitDurationInOpenState', 'a positive duration', 0),
      ],
    ])('refuses %s at startup', (_label, resolve, message) => {
      expect(resolve).toThrow(message);
    });
  });

  it.each([10, 99, 981])('shouldPassPositiveDuration: %p ms as wait, exponential start and cap', (ms) => {
    expect(
      resolveRetry({
        waitDuration: ms,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 1,
        exponentialMaxWaitDuration: ms,
      }),
    ).not.toThrow();
    expect(
      resolveRetry({
        waitDuration: ms,
        enableRandomizedWait: true,
        enableExponentialBackoff: true,
        exponentialMaxWaitDuration: ms,
      }),
    ).not.toThrow();
    expect(
      resolveBreaker({
        waitDurationInOpenState: ms,
        enableExponentialBackoff: true,
        exponentialMaxWaitDurationInOpenState: ms,
      }),
    ).not.toThrow();
    expect(resolveBreaker({ waitDurationInOpenState: ms, enableRandomizedWait: true })).not.toThrow();
  });

  it.each([-0.0001, 1.0001])('shouldRejectOutOfBoundsRandomizationFactor: %p', (factor) => {
    expect(resolveRetry({ enableRandomizedWait: true, randomizedWaitFactor: factor })).toThrow(
      INVALID_VALUE(retryPlace, 'randomizedWaitFactor', 'a number >= 0 and <= 1', factor),
    );
    expect(resolveBreaker({ enableRandomizedWait: true, randomizedWaitFactor: factor })).toThrow(
      INVALID_VALUE(breakerPlace, 'randomizedWaitFactor', 'a number >= 0 and <= 1', factor),
    );
  });

  it.each([0, 0.1, 0.25, 0.5, 0.75, 1])('shouldPassPositiveRandomizationFactor: %p', (factor) => {
    expect(resolveRetry({ enableRandomizedWait: true, randomizedWaitFactor: factor })).not.toThrow();
    expect(
      resolveRetry({
        enableRandomizedWait: true,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 1.5,
        randomizedWaitFactor: factor,
      }),
    ).not.toThrow();
    expect(resolveBreaker({ enableRandomizedWait: true, randomizedWaitFactor: factor })).not.toThrow();
  });

  it('shouldPassPositiveMultiplier: 1.0001', () => {
    expect(resolveRetry({ enableExponentialBackoff: true, exponentialBackoffMultiplier: 1.0001 })).not.toThrow();
    expect(resolveBreaker({ enableExponentialBackoff: true, exponentialBackoffMultiplier: 1.0001 })).not.toThrow();
  });

  it('deliberate difference: a multiplier below 1 (a wait that shrinks) is refused, where Resilience4j accepts any > 0', () => {
    expect(resolveRetry({ enableExponentialBackoff: true, exponentialBackoffMultiplier: 0.5 })).toThrow(
      INVALID_VALUE(retryPlace, 'exponentialBackoffMultiplier', 'a number >= 1', 0.5),
    );
    expect(resolveBreaker({ enableExponentialBackoff: true, exponentialBackoffMultiplier: 0.5 })).toThrow(
      INVALID_VALUE(breakerPlace, 'exponentialBackoffMultiplier', 'a number >= 1', 0.5),
    );
  });

  it('generatesRandomizedIntervals: ofRandomized(100, 0.5) stays in [50, 150] over 49 attempts', () => {
    const waits = retryWaits(
      retryConfig({ waitDuration: 100, enableRandomizedWait: true, randomizedWaitFactor: 0.5 }),
      49,
    );
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(50);
      expect(wait).toBeLessThanOrEqual(150);
      expect(Number.isInteger(wait)).toBe(true);
    }
    for (const wait of openWaits(
      { waitDurationInOpenState: 100, enableRandomizedWait: true, randomizedWaitFactor: 0.5 },
      49,
    )) {
      expect(wait).toBeGreaterThanOrEqual(50);
      expect(wait).toBeLessThanOrEqual(150);
    }
  });

  it('generatesExponentialIntervals: ofExponentialBackoff(100, 1.5) grows strictly over 49 attempts', () => {
    const waits = retryWaits(
      retryConfig({ waitDuration: 100, enableExponentialBackoff: true, exponentialBackoffMultiplier: 1.5 }),
      49,
    );
    expect(waits.slice(0, 5)).toEqual([100, 150, 225, 337, 505]);
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThan(waits[i - 1]);
    expect(
      openWaits({ waitDurationInOpenState: 100, enableExponentialBackoff: true, exponentialBackoffMultiplier: 1.5 }, 5),
    ).toEqual([100, 150, 225, 337, 505]);
  });

  it('generatesCappedExponentialIntervals: ofExponentialBackoff(100, 2, 100_000)', () => {
    const config = retryConfig({
      waitDuration: 100,
      enableExponentialBackoff: true,
      exponentialBackoffMultiplier: 2,
      exponentialMaxWaitDuration: 100_000,
    });
    const waits = retryWaits(config, 13);
    for (let i = 1; i < 11; i++) expect(waits[i]).toBeGreaterThan(waits[i - 1]);
    expect(waits.slice(11)).toEqual([100_000, 100_000]);
    const breaker = openWaits(
      {
        waitDurationInOpenState: 100,
        enableExponentialBackoff: true,
        exponentialBackoffMultiplier: 2,
        exponentialMaxWaitDurationInOpenState: 100_000,
      },
      13,
    );
    expect(breaker).toEqual(waits);
  });

  it('generatesExponentialRandomIntervals: ofExponentialRandomBackoff(100, 1.5, 0.5)', () => {
    const config = retryConfig({
      waitDuration: 100,
      enableExponentialBackoff: true,
      exponentialBackoffMultiplier: 1.5,
      enableRandomizedWait: true,
      randomizedWaitFactor: 0.5,
    });
    let expected = 100;
    for (const wait of retryWaits(config, 49)) {
      expect(wait).toBeGreaterThanOrEqual(Math.floor(expected * 0.5) - 1);
      expect(wait).toBeLessThanOrEqual(Math.floor(expected * 1.5) + 1);
      expected = Math.floor(expected * 1.5);
    }
  });

  it('generatesCappedExponentialRandomIntervals: ofExponentialRandomBackoff(100, 1.5, 0.5, 100_000) never exceeds the cap', () => {
    const config = retryConfig({
      waitDuration: 100,
      enableExponentialBackoff: true,
      exponentialBackoffMultiplier: 1.5,
      enableRandomizedWait: true,
      randomizedWaitFactor: 0.5,
      exponentialMaxWaitDuration: 100_000,
    });
    let expected = 100;
    const waits = retryWaits(config, 49);
    for (const wait of waits) {
      expect(wait === 100_000 || wait >= Math.floor(expected * 0.5) - 1).toBe(true);
      expect(wait === 100_000 || wait <= Math.floor(expected * 1.5) + 1).toBe(true);
      expect(wait).toBeLessThanOrEqual(100_000);
      expected = Math.floor(expected * 1.5);
    }
    // The cap applies after randomization: the late attempts sit exactly at it.
    expect(waits.slice(-10)).toEqual(Array(10).fill(100_000));
  });
});
