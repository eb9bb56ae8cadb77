import * as fc from 'fast-check';
import { backoffDelay } from './backoff';
import { JitterKind, RetryConfig, RETRY_SCHEMA } from './retry.config';

/** Random retry settings as the schema admits them (randomized wait only with `none` or `full` jitter). */
const configs: fc.Arbitrary<RetryConfig> = fc
  .record({
    waitDuration: fc.integer({ min: 0, max: 60_000 }),
    enableExponentialBackoff: fc.boolean(),
    exponentialBackoffMultiplier: fc.double({ min: 1, max: 4, noNaN: true }),
    exponentialMaxWaitDuration: fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 0, max: 120_000 })),
    enableRandomizedWait: fc.boolean(),
    randomizedWaitFactor: fc.double({ min: 0, max: 0.999, noNaN: true }),
    jitter: fc.constantFrom<JitterKind>('full', 'equal', 'decorrelated', 'none'),
  })
  .map((drawn) => ({
    ...RETRY_SCHEMA.defaults,
    ...drawn,
    jitter: drawn.enableRandomizedWait && drawn.jitter !== 'full' ? 'none' : drawn.jitter,
  }));

const attempts = fc.integer({ min: 1, max: 30 });
/** A uniform [0, 1) source, as Math.random. */
const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
const previousWaits = fc.integer({ min: 0, max: 120_000 });

/** Resilience4j's interval before jitter: fixed, or exponential from the base, capped. */
const bound = (config: RetryConfig, attempt: number): number =>
  Math.min(
    config.exponentialMaxWaitDuration,
    config.enableExponentialBackoff ? config.waitDuration * config.exponentialBackoffMultiplier ** (attempt - 1) : config.waitDuration,
  );

/** Equal up to floating-point rounding, relative to the size of the values. */
const expectClose = (actual: number, expected: number): void =>
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(expected)));

describe('backoffDelay (properties)', () => {
  it('never waits less than 0 nor more than the cap, except a randomized wait spreading around it', () => {
    fc.assert(
      fc.property(configs, attempts, previousWaits, unit, (config, attempt, previous, r) => {
        const wait = backoffDelay(config, attempt, previous, () => r);
        expect(Number.isFinite(wait)).toBe(true);
        expect(wait).toBeGreaterThanOrEqual(0);
        const spread = config.enableRandomizedWait ? 1 + config.randomizedWaitFactor : 1;
        expect(wait).toBeLessThanOrEqual(config.exponentialMaxWaitDuration * spread + 1e-9);
      }),
    );
  });

  it('keeps each kind of wait within its own bounds', () => {
    fc.assert(
      fc.property(configs, attempts, previousWaits, unit, (config, attempt, previous, r) => {
        const wait = backoffDelay(config, attempt, previous, () => r);
        const b = bound(config, attempt);
        const eps = 1e-9 * Math.max(1, b);
        if (config.enableRandomizedWait) {
          expect(wait).toBeGreaterThanOrEqual(b * (1 - config.randomizedWaitFactor) - eps);
          expect(wait).toBeLessThanOrEqual(b * (1 + config.randomizedWaitFactor) + eps);
          return;
        }
        switch (config.jitter) {
          case 'none':
            expect(wait).toBe(b);
            break;
          case 'full':
            expect(wait).toBeGreaterThanOrEqual(0);
            expect(wait).toBeLessThanOrEqual(b);
            break;
          case 'equal':
            expect(wait).toBeGreaterThanOrEqual(b / 2 - eps);
            expect(wait).toBeLessThanOrEqual(b + eps);
            break;
          case 'decorrelated': {
            const cap = config.exponentialMaxWaitDuration;
            expect(wait).toBeGreaterThanOrEqual(Math.min(cap, config.waitDuration) - eps);
            expect(wait).toBeLessThanOrEqual(Math.min(cap, Math.max(config.waitDuration, previous * 3)) + eps);
            break;
          }
        }
      }),
    );
  });

  it('spans each jitter range: the lowest and highest random draws give its ends', () => {
    fc.assert(
      fc.property(configs, attempts, (config, attempt) => {
        fc.pre(!config.enableRandomizedWait);
        const b = bound(config, attempt);
        const low = backoffDelay(config, attempt, 0, () => 0);
        const high = backoffDelay(config, attempt, 0, () => 1 - Number.EPSILON);
        // Decorrelated jitter grows from the previous wait; after a wait of 0 it stays at the base.
        const base = Math.min(config.exponentialMaxWaitDuration, config.waitDuration);
        const expected = { none: [b, b], full: [0, b], equal: [b / 2, b], decorrelated: [base, base] }[config.jitter];
        expectClose(low, expected[0]);
        expectClose(high, expected[1]);
      }),
    );
  });

  it('grows the exponential interval by the multiplier per attempt until the cap', () => {
    fc.assert(
      fc.property(configs, fc.integer({ min: 1, max: 29 }), (drawn, attempt) => {
        const config = { ...drawn, enableExponentialBackoff: true, enableRandomizedWait: false, jitter: 'none' as const };
        const now = backoffDelay(config, attempt, 0, () => 0.5);
        const next = backoffDelay(config, attempt + 1, 0, () => 0.5);
        expect(next).toBeGreaterThanOrEqual(now);
        expectClose(next, Math.min(config.exponentialMaxWaitDuration, now * config.exponentialBackoffMultiplier));
      }),
    );
  });

  it('waits the fixed interval, capped, on every attempt without exponential backoff', () => {
    fc.assert(
      fc.property(configs, attempts, (drawn, attempt) => {
        const config = { ...drawn, enableExponentialBackoff: false, enableRandomizedWait: false, jitter: 'none' as const };
        expect(backoffDelay(config, attempt, 0, () => 0.5)).toBe(Math.min(config.exponentialMaxWaitDuration, config.waitDuration));
      }),
    );
  });
});
