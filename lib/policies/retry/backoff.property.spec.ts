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
// Draws within 1e-6 of 1 are left out: base + r × (span + 1) can round up to span + 1 there.
const unit = fc.double({ min: 0, max: 0.999999, noNaN: true });
const previousWaits = fc.integer({ min: 0, max: 120_000 });

/** Resilience4j's interval before jitter, in whole ms: fixed (uncapped), or exponential, floored at each step and capped. */
const bound = (config: RetryConfig, attempt: number): number => {
  if (!config.enableExponentialBackoff) return Math.floor(config.waitDuration);
  let interval = Math.floor(config.waitDuration);
  for (let step = 1; step < attempt && interval < config.exponentialMaxWaitDuration; step++) {
    interval = Math.floor(interval * config.exponentialBackoffMultiplier);
  }
  return Math.min(interval, config.exponentialMaxWaitDuration);
};

describe('backoffDelay (properties)', () => {
  it('waits a whole number of ms, never below 0, and never above the cap with exponential backoff', () => {
    fc.assert(
      fc.property(configs, attempts, previousWaits, unit, (config, attempt, previous, r) => {
        const wait = backoffDelay(config, attempt, previous, () => r);
        expect(Number.isInteger(wait)).toBe(true);
        expect(wait).toBeGreaterThanOrEqual(0);
        if (config.enableExponentialBackoff || config.jitter === 'decorrelated') {
          expect(wait).toBeLessThanOrEqual(config.exponentialMaxWaitDuration);
        }
      }),
    );
  });

  it('keeps each kind of wait within its own bounds', () => {
    fc.assert(
      fc.property(configs, attempts, previousWaits, unit, (config, attempt, previous, r) => {
        const wait = backoffDelay(config, attempt, previous, () => r);
        const b = bound(config, attempt);
        const cap = config.exponentialMaxWaitDuration;
        if (config.enableRandomizedWait) {
          const interval = config.enableExponentialBackoff
            ? bound({ ...config, exponentialMaxWaitDuration: Number.POSITIVE_INFINITY }, attempt)
            : b;
          // Whole ms drawn over [min, max + 1) and truncated. interval - factor × interval and interval × (1 - factor)
          // round differently in the last bits, which past 2^53 ms are whole ms or more: allow that much either side.
          const slack = 1 + Math.ceil(interval * Number.EPSILON * 4);
          const upper = Math.max(1, Math.ceil(interval * (1 + config.randomizedWaitFactor))) + slack;
          const lower = Math.max(1, Math.floor(interval * (1 - config.randomizedWaitFactor)) - slack);
          expect(wait).toBeGreaterThanOrEqual(Math.min(config.enableExponentialBackoff ? cap : Infinity, lower));
          expect(wait).toBeLessThanOrEqual(config.enableExponentialBackoff ? Math.min(cap, upper) : upper);
          return;
        }
        switch (config.jitter) {
          case 'none':
            expect(wait).toBe(b);
            break;
          case 'full':
            expect(wait).toBeLessThanOrEqual(b);
            break;
          case 'equal':
            expect(wait).toBeGreaterThanOrEqual(Math.floor(b / 2));
            expect(wait).toBeLessThanOrEqual(b);
            break;
          case 'decorrelated':
            expect(wait).toBeGreaterThanOrEqual(Math.min(cap, config.waitDuration));
            expect(wait).toBeLessThanOrEqual(Math.min(cap, Math.max(config.waitDuration, previous * 3)));
            break;
        }
      }),
    );
  });

  it('spans each jitter range: the lowest and highest random draws give its ends', () => {
    fc.assert(
      fc.property(configs, attempts, (config, attempt) => {
        const b = bound(config, attempt);
        fc.pre(!config.enableRandomizedWait && b < 100_000);
        // Decorrelated jitter grows from the previous wait; after a wait of 0 it stays at the base.
        const base = Math.min(config.exponentialMaxWaitDuration, config.waitDuration);
        const expected = { none: [b, b], full: [0, b], equal: [Math.floor(b / 2), b], decorrelated: [base, base] }[
          config.jitter
        ];
        expect(backoffDelay(config, attempt, 0, () => 0)).toBe(expected[0]);
        expect(backoffDelay(config, attempt, 0, () => 0.999999)).toBe(expected[1]);
      }),
    );
  });

  it('grows the exponential interval by the multiplier per attempt, in whole ms, until the cap', () => {
    fc.assert(
      fc.property(configs, fc.integer({ min: 1, max: 29 }), (drawn, attempt) => {
        const config = {
          ...drawn,
          enableExponentialBackoff: true,
          enableRandomizedWait: false,
          jitter: 'none' as const,
        };
        const now = backoffDelay(config, attempt, 0, () => 0.5);
        const next = backoffDelay(config, attempt + 1, 0, () => 0.5);
        expect(next).toBe(
          Math.min(config.exponentialMaxWaitDuration, Math.floor(now * config.exponentialBackoffMultiplier)),
        );
      }),
    );
  });

  it('waits the fixed interval on every attempt without exponential backoff', () => {
    fc.assert(
      fc.property(configs, attempts, (drawn, attempt) => {
        const config = {
          ...drawn,
          enableExponentialBackoff: false,
          enableRandomizedWait: false,
          jitter: 'none' as const,
        };
        expect(backoffDelay(config, attempt, 0, () => 0.5)).toBe(config.waitDuration);
      }),
    );
  });
});
