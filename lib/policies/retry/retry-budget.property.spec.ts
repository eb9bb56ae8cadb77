import * as fc from 'fast-check';
import { VirtualClock } from '../../kernel/clock';
import { RetryBudget } from '../../kernel/retry-budget';
import { RetryPolicy } from './retry.policy';
import { RETRY_SCHEMA } from './retry.config';

const budgets = fc.record({
  ratio: fc.double({ min: 0.001, max: 1, noNaN: true }),
  maxTokens: fc.integer({ min: 1, max: 100 }),
});

describe('RetryBudget (properties)', () => {
  it('never holds less than 0 nor more than maxTokens, and withdraws only a whole token it has', () => {
    fc.assert(
      fc.property(
        budgets,
        fc.array(fc.constantFrom('success', 'withdraw'), { maxLength: 300 }),
        (config, operations) => {
          const budget = new RetryBudget(config);
          expect(budget.tokens).toBe(Math.floor((config.maxTokens * 1000) / 2) / 1000);
          for (const operation of operations) {
            const before = budget.tokens;
            if (operation === 'success') {
              budget.onSuccess();
              expect(budget.tokens).toBeGreaterThanOrEqual(before);
            } else {
              const taken = budget.tryWithdraw();
              expect(taken).toBe(before >= 1);
              expect(budget.tokens).toBeCloseTo(taken ? before - 1 : before, 9);
            }
            expect(budget.tokens).toBeGreaterThanOrEqual(0);
            expect(budget.tokens).toBeLessThanOrEqual(config.maxTokens);
          }
        },
      ),
    );
  });

  it('allows no more withdrawals than half the bucket plus ratio × successes', () => {
    fc.assert(
      fc.property(
        budgets,
        fc.array(fc.constantFrom('success', 'withdraw'), { maxLength: 300 }),
        (config, operations) => {
          const budget = new RetryBudget(config);
          let successes = 0;
          let withdrawn = 0;
          for (const operation of operations) {
            if (operation === 'success') {
              budget.onSuccess();
              successes++;
            } else if (budget.tryWithdraw()) {
              withdrawn++;
            }
            // Deposits are kept in milli-tokens, so the ratio counts rounded to a thousandth.
            expect(withdrawn).toBeLessThanOrEqual(
              config.maxTokens / 2 + (successes * Math.round(config.ratio * 1000)) / 1000,
            );
          }
        },
      ),
    );
  });

  it('caps the retries of a RetryPolicy at maxTokens / 2 + first attempts × ratio', async () => {
    await fc.assert(
      fc.asyncProperty(
        budgets,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        async (budget, firstAttemptFails) => {
          const clock = new VirtualClock();
          const config = { ...RETRY_SCHEMA.defaults, maxAttempts: 3, waitDuration: 0, jitter: 'none' as const, budget };
          const retry = new RetryPolicy('r', config, clock);
          let retries = 0;
          retry.onRetry(() => retries++);
          for (const fails of firstAttemptFails) {
            let attempt = 0;
            await retry
              .execute(() => {
                attempt++;
                if (fails && attempt === 1) throw Object.assign(new Error('busy'), { status: 503 });
                return 'ok';
              })
              .catch(() => undefined);
          }
          expect(retries).toBeLessThanOrEqual(
            budget.maxTokens / 2 + (firstAttemptFails.length * Math.round(budget.ratio * 1000)) / 1000,
          );
          expect(retries + retry.metrics.budgetDenied).toBe(firstAttemptFails.filter(Boolean).length);
        },
      ),
    );
  });
});
