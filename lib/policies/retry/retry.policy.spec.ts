import { HttpException } from '@nestjs/common';
import { VirtualClock } from '../../kernel/clock';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  MaxRetriesExceededError,
  TimeoutExceededError,
} from '../../kernel/errors';
import { backoffDelay } from './backoff';
import { RetryPolicy } from './retry.policy';
import type { RetryEvent } from './retry.events';
import { RetryBudget } from '../../kernel/retry-budget';
import { RETRY_SCHEMA, RetryConfig } from './retry.config';

const config = (overrides: Partial<RetryConfig> = {}): RetryConfig => ({
  ...RETRY_SCHEMA.defaults,
  jitter: 'none',
  ...overrides,
});

class StatusError extends Error {
  constructor(readonly status: number) {
    super(`status ${status}`);
  }
}
class ConnectionReset extends Error {
  readonly code = 'ECONNRESET';
}
class PaymentDeclinedException extends Error {}
class CardExpired extends PaymentDeclinedException {}

/** A function failing with the given errors, then returning `value`. */
function failing(errors: unknown[], value = 'ok'): { fn: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    fn: async () => {
      const error = errors[calls++];
      if (error !== undefined) throw error;
      return value;
    },
    calls: () => calls,
  };
}

/** Runs `promise` to completion while draining the virtual clock. */
async function drain<T>(clock: VirtualClock, promise: Promise<T>): Promise<T> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 1000 && !settled; i++) {
    if (!(await clock.runNext())) await VirtualClock.settle();
  }
  return promise;
}

describe('backoffDelay', () => {
  const fixedRandom = (r: number) => () => r;

  it('waits the same fixed interval after every attempt', () => {
    const c = config({ waitDuration: 200 });
    expect([1, 2, 3, 4].map((a) => backoffDelay(c, a, 200, Math.random))).toEqual([200, 200, 200, 200]);
  });

  it('grows exponentially by the multiplier and stops at the cap', () => {
    const c = config({
      waitDuration: 100,
      enableExponentialBackoff: true,
      exponentialBackoffMultiplier: 2,
      exponentialMaxWaitDuration: 500,
    });
    expect([1, 2, 3, 4, 5].map((a) => backoffDelay(c, a, 0, Math.random))).toEqual([100, 200, 400, 500, 500]);
  });

  it("uses Resilience4j's 1.5 multiplier by default, truncating every step to whole ms as IntervalFunction does", () => {
    const c = config({ waitDuration: 100, enableExponentialBackoff: true });
    expect([1, 2, 3, 4, 5].map((a) => backoffDelay(c, a, 0, Math.random))).toEqual([100, 150, 225, 337, 505]);
  });

  it('applies exponentialMaxWaitDuration only with exponential backoff, as Resilience4j', () => {
    const fixed = config({ waitDuration: 1000, exponentialMaxWaitDuration: 300 });
    expect(backoffDelay(fixed, 3, 0, Math.random)).toBe(1000);
    const randomized = config({ waitDuration: 1000, exponentialMaxWaitDuration: 300, enableRandomizedWait: true });
    expect(backoffDelay(randomized, 3, 0, fixedRandom(0.9999))).toBe(1500);
  });

  it('caps a randomized exponential wait after randomizing it', () => {
    const c = config({
      waitDuration: 100,
      enableExponentialBackoff: true,
      enableRandomizedWait: true,
      exponentialMaxWaitDuration: 1000,
    });
    // attempt 6: 100 → 757 ms, randomized over [378.5, 1135.5], then capped.
    expect(backoffDelay(c, 6, 0, fixedRandom(0.999))).toBe(1000);
    expect(backoffDelay(c, 6, 0, fixedRandom(0))).toBe(378);
  });

  it('full jitter draws whole ms uniformly in [0, bound]', () => {
    const c = config({
      waitDuration: 100,
      enableExponentialBackoff: true,
      exponentialBackoffMultiplier: 2,
      jitter: 'full',
    });
    expect(backoffDelay(c, 3, 0, fixedRandom(0))).toBe(0);
    expect(backoffDelay(c, 3, 0, fixedRandom(0.25))).toBe(100);
    expect(backoffDelay(c, 3, 0, fixedRandom(0.999))).toBe(400);
  });

  it('equal jitter stays in [bound/2, bound]', () => {
    const c = config({ waitDuration: 400, jitter: 'equal' });
    expect(backoffDelay(c, 1, 0, fixedRandom(0))).toBe(200);
    expect(backoffDelay(c, 1, 0, fixedRandom(0.5))).toBe(300);
    expect(backoffDelay(c, 1, 0, fixedRandom(0.999))).toBe(400);
  });

  it('decorrelated jitter draws in [base, 3 x previous wait], capped', () => {
    const c = config({ waitDuration: 100, jitter: 'decorrelated', exponentialMaxWaitDuration: 1000 });
    expect(backoffDelay(c, 2, 300, fixedRandom(0))).toBe(100);
    expect(backoffDelay(c, 2, 300, fixedRandom(0.5))).toBe(500);
    expect(backoffDelay(c, 5, 900, fixedRandom(0.99))).toBe(1000);
  });

  it('randomized wait spreads whole ms by the factor around the interval, the upper bound included', () => {
    const c = config({ waitDuration: 1000, enableRandomizedWait: true, randomizedWaitFactor: 0.5 });
    expect(backoffDelay(c, 1, 0, fixedRandom(0))).toBe(500);
    expect(backoffDelay(c, 1, 0, fixedRandom(0.5))).toBe(1000);
    expect(backoffDelay(c, 1, 0, fixedRandom(0.9999))).toBe(1500);
  });

  it('accepts a randomizedWaitFactor of 1: waits from 1 ms to twice the interval', () => {
    const c = config({ waitDuration: 1000, enableRandomizedWait: true, randomizedWaitFactor: 1 });
    expect(backoffDelay(c, 1, 0, fixedRandom(0))).toBe(1);
    expect(backoffDelay(c, 1, 0, fixedRandom(0.99999))).toBe(2000);
  });
});

describe('RetryBudget', () => {
  it('starts half full and is kept in whole milli-tokens', () => {
    const budget = new RetryBudget({ ratio: 0.1, maxTokens: 10 });
    expect(budget.tokens).toBe(5);
    for (let i = 0; i < 30; i++) budget.onSuccess();
    expect(budget.tokens).toBe(8);
  });

  it('gives exactly one retry for ten successes at ratio 0.1', () => {
    const budget = new RetryBudget({ ratio: 0.1, maxTokens: 10 });
    while (budget.tryWithdraw());
    expect(budget.tokens).toBe(0);
    for (let i = 0; i < 9; i++) budget.onSuccess();
    expect(budget.tryWithdraw()).toBe(false);
    budget.onSuccess();
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('never holds more than maxTokens', () => {
    const budget = new RetryBudget({ ratio: 1, maxTokens: 4 });
    for (let i = 0; i < 100; i++) budget.onSuccess();
    expect(budget.tokens).toBe(4);
  });
});

describe('RetryPolicy', () => {
  let clock: VirtualClock;
  beforeEach(() => (clock = new VirtualClock()));

  it('retries a retryable error and waits the backoff on the injected clock', async () => {
    const retry = new RetryPolicy('inventory', config({ maxAttempts: 3, waitDuration: 500 }), clock);
    const { fn, calls } = failing([new StatusError(503), new StatusError(503)]);
    const result = retry.execute(fn);
    await clock.advance(499);
    expect(calls()).toBe(1);
    await clock.advance(1);
    expect(calls()).toBe(2);
    await clock.advance(500);
    await expect(result).resolves.toBe('ok');
    expect(calls()).toBe(3);
    expect(retry.metrics).toEqual({
      successfulCallsWithoutRetry: 0,
      successfulCallsWithRetry: 1,
      failedCallsWithoutRetry: 0,
      failedCallsWithRetry: 0,
      budgetDenied: 0,
    });
  });

  it('re-raises the original error, not a wrapper, after the last attempt', async () => {
    const retry = new RetryPolicy('inventory', config({ maxAttempts: 3, waitDuration: 10 }), clock);
    const errors = [new StatusError(503), new StatusError(502), new StatusError(504)];
    const { fn, calls } = failing(errors);
    await expect(drain(clock, retry.execute(fn))).rejects.toBe(errors[2]);
    expect(calls()).toBe(3);
    expect(retry.metrics.failedCallsWithRetry).toBe(1);
  });

  it.each([
    ['a time limiter timeout', new TimeoutExceededError('t', 100), true],
    ['ECONNRESET', new ConnectionReset('reset'), true],
    ['a failed fetch', Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }), true],
    ['HTTP 429', new StatusError(429), true],
    ['HTTP 502 in statusCode', Object.assign(new Error('bad gateway'), { statusCode: 502 }), true],
    ['HTTP 503 in response.status', Object.assign(new Error('axios'), { response: { status: 503 } }), true],
    ['HttpException 504', new HttpException('gateway timeout', 504), true],
    ['HTTP 400', new StatusError(400), false],
    ['HTTP 404', new StatusError(404), false],
    ['HTTP 500', new StatusError(500), false],
    ['a plain Error', new Error('boom'), false],
    ['CallNotPermittedError', new CallNotPermittedError('payments', 'OPEN', 1000), false],
    ['BulkheadFullError', new BulkheadFullError('payments'), false],
    ['DeadlineExceededError', new DeadlineExceededError(), false],
  ])('default retryable set: %s → %s', async (_label, error, retried) => {
    const retry = new RetryPolicy('r', config({ maxAttempts: 2, waitDuration: 0 }), clock);
    const { fn, calls } = failing([error]);
    const outcome = drain(clock, retry.execute(fn));
    if (retried) await expect(outcome).resolves.toBe('ok');
    else await expect(outcome).rejects.toBe(error);
    expect(calls()).toBe(retried ? 2 : 1);
  });

  it('retries listed exceptions by class or by (dotted) name, including subclasses; ignore wins', async () => {
    const byName = new RetryPolicy(
      'r',
      config({ maxAttempts: 2, waitDuration: 0, retryExceptions: ['com.example.PaymentDeclinedException'] }),
      clock,
    );
    const a = failing([new CardExpired('expired')]);
    await expect(drain(clock, byName.execute(a.fn))).resolves.toBe('ok');
    expect(a.calls()).toBe(2);

    const ignored = new RetryPolicy(
      'r',
      config({
        maxAttempts: 2,
        waitDuration: 0,
        retryExceptions: [PaymentDeclinedException],
        ignoreExceptions: ['CardExpired'],
      }),
      clock,
    );
    const b = failing([new CardExpired('expired')]);
    await expect(drain(clock, ignored.execute(b.fn))).rejects.toBeInstanceOf(CardExpired);
    expect(b.calls()).toBe(1);

    const ignoreDefault = new RetryPolicy(
      'r',
      config({ maxAttempts: 2, waitDuration: 0, ignoreExceptions: [StatusError] }),
      clock,
    );
    const c = failing([new StatusError(503)]);
    await expect(drain(clock, ignoreDefault.execute(c.fn))).rejects.toBeInstanceOf(StatusError);
    expect(c.calls()).toBe(1);
  });

  it.each<[string, RetryConfig['retryExceptions'], unknown, boolean]>([
    ['no list: a plain error', [], new Error('bug'), true],
    ['no list: an HTTP 404', [], new StatusError(404), true],
    ['no list: CallNotPermittedError', [], new CallNotPermittedError('b', 'OPEN', 1000), true],
    ['a list: a listed error', [PaymentDeclinedException], new CardExpired('expired'), true],
    ['a list: an HTTP 503 it does not name', [PaymentDeclinedException], new StatusError(503), false],
    ['a list: ECONNRESET it does not name', [PaymentDeclinedException], new ConnectionReset('reset'), false],
    ['a list: a timeout it does not name', [PaymentDeclinedException], new TimeoutExceededError('t', 100), false],
  ])("exceptionRules 'resilience4j', %s → retried %p", async (_label, retryExceptions, error, retried) => {
    const retry = new RetryPolicy(
      'r',
      config({ maxAttempts: 2, waitDuration: 0, exceptionRules: 'resilience4j', retryExceptions }),
      clock,
    );
    const { fn, calls } = failing([error]);
    const outcome = drain(clock, retry.execute(fn));
    if (retried) await expect(outcome).resolves.toBe('ok');
    else await expect(outcome).rejects.toBe(error);
    expect(calls()).toBe(retried ? 2 : 1);
  });

  it("exceptionRules 'resilience4j': ignoreExceptions still wins", async () => {
    const retry = new RetryPolicy(
      'r',
      config({ maxAttempts: 2, waitDuration: 0, exceptionRules: 'resilience4j', ignoreExceptions: [StatusError] }),
      clock,
    );
    const { fn, calls } = failing([new StatusError(503)]);
    await expect(drain(clock, retry.execute(fn))).rejects.toBeInstanceOf(StatusError);
    expect(calls()).toBe(1);
  });

  it('retries on result and returns the last result, or throws MaxRetriesExceededError with failAfterMaxAttempts', async () => {
    let calls = 0;
    const pending = async () => ({ status: ++calls < 10 ? 'PENDING' : 'DONE' });
    const retryOnResult = (r: unknown) => (r as { status: string }).status === 'PENDING';
    const lenient = new RetryPolicy('poll', config({ maxAttempts: 3, waitDuration: 5, retryOnResult }), clock);
    const outcomes: string[] = [];
    lenient.onSuccess(() => outcomes.push('SUCCESS'));
    lenient.onError((e) => outcomes.push(`ERROR ${(e.error as Error).constructor.name} after ${e.attempts}`));
    await expect(drain(clock, lenient.execute(pending))).resolves.toEqual({ status: 'PENDING' });
    expect(calls).toBe(3);
    // As Resilience4j's RetryImpl: retries on a value that run out are a failure with retry, published as ERROR.
    expect(lenient.metrics).toMatchObject({ successfulCallsWithRetry: 0, failedCallsWithRetry: 1 });
    expect(outcomes).toEqual(['ERROR MaxRetriesExceededError after 3']);
    calls = 0;
    const strict = new RetryPolicy(
      'poll',
      config({ maxAttempts: 3, waitDuration: 5, retryOnResult, failAfterMaxAttempts: true }),
      clock,
    );
    const error = await drain(clock, strict.execute(pending)).catch((e) => e);
    expect(error).toBeInstanceOf(MaxRetriesExceededError);
    expect(error).toMatchObject({ instance: 'poll', attempts: 3, lastResult: { status: 'PENDING' } });
  });

  it('a retryOnResult that throws ends the call with its error, counted as a failure, on the first attempt and after retries', async () => {
    const bug = new TypeError('retryOnResult bug');
    let calls = 0;
    const retryOnResult = (r: unknown) => {
      if (r === 'BROKEN') throw bug;
      return r === 'PENDING';
    };
    const retry = new RetryPolicy('poll', config({ maxAttempts: 3, waitDuration: 5, retryOnResult }), clock);
    await expect(
      drain(
        clock,
        retry.execute(async () => 'BROKEN'),
      ),
    ).rejects.toBe(bug);
    await expect(
      drain(
        clock,
        retry.execute(async () => (++calls === 1 ? 'PENDING' : 'BROKEN')),
      ),
    ).rejects.toBe(bug);
    await expect(
      drain(
        clock,
        retry.execute(async () => 'DONE'),
      ),
    ).resolves.toBe('DONE');
    expect(retry.metrics).toMatchObject({
      failedCallsWithoutRetry: 1,
      failedCallsWithRetry: 1,
      successfulCallsWithoutRetry: 1,
    });
  });

  it('respects Retry-After when longer than the backoff, and gives up when it exceeds the bound', async () => {
    const retry = new RetryPolicy('r', config({ maxAttempts: 2, waitDuration: 100, retryAfterMaxWait: 5000 }), clock);
    const waits: number[] = [];
    retry.onRetry((e) => waits.push(e.waitMs));
    const withHeader = Object.assign(new StatusError(429), { headers: { 'Retry-After': '2' } });
    await expect(drain(clock, retry.execute(failing([withHeader]).fn))).resolves.toBe('ok');
    expect(waits).toEqual([2000]);
    expect(clock.now()).toBe(2000);

    const tooLong = Object.assign(new StatusError(503), { headers: { 'retry-after': '60' } });
    const { fn, calls } = failing([tooLong]);
    await expect(drain(clock, retry.execute(fn))).rejects.toBe(tooLong);
    expect(calls()).toBe(1);
  });

  it('emits onRetry with the attempt, the wait and the error', async () => {
    const retry = new RetryPolicy(
      'r',
      config({ maxAttempts: 3, waitDuration: 100, enableExponentialBackoff: true, exponentialBackoffMultiplier: 2 }),
      clock,
    );
    const events: RetryEvent[] = [];
    const unsubscribe = retry.onRetry((e) => events.push(e));
    const errors = [new StatusError(503), new StatusError(503)];
    await drain(clock, retry.execute(failing(errors).fn));
    expect(events).toEqual([
      { name: 'r', attempt: 1, waitMs: 100, error: errors[0] },
      { name: 'r', attempt: 2, waitMs: 200, error: errors[1] },
    ]);
    unsubscribe();
    await drain(clock, retry.execute(failing([new StatusError(503)]).fn));
    expect(events).toHaveLength(2);
  });

  it('never sleeps past the request deadline: the original error propagates instead', async () => {
    const retry = new RetryPolicy('r', config({ maxAttempts: 5, waitDuration: 300 }), clock);
    const scope = new ResilienceContext(clock, clock.now() + 1000);
    const error = new StatusError(503);
    let calls = 0;
    const fn = async () => {
      calls++;
      throw error;
    };
    const result = contextStorage.run(scope, () => retry.execute(fn));
    let settledAt = Number.NaN;
    void result.catch(() => (settledAt = clock.now()));
    await expect(drain(clock, result)).rejects.toBe(error);
    // attempts at t=0, 300, 600; a fourth would sleep to 900 with 100 left, a fifth past the deadline
    expect(calls).toBe(4);
    expect(settledAt).toBeLessThan(1000);
  });

  describe('retry budget', () => {
    it('withdraws no token when no retry follows (the last attempt)', async () => {
      const retry = new RetryPolicy(
        'r',
        config({ maxAttempts: 2, waitDuration: 0, budget: { ratio: 0.1, maxTokens: 4 } }),
        clock,
      );
      expect(retry.budgetTokens).toBe(2);
      await expect(
        drain(clock, retry.execute(failing([new StatusError(503), new StatusError(503)]).fn)),
      ).rejects.toBeInstanceOf(StatusError);
      expect(retry.budgetTokens).toBe(1);
    });

    it('stops retrying a dependency failing 100% once the reserve is spent: calls <= first attempts + maxTokens / 2', async () => {
      const maxTokens = 10;
      const retry = new RetryPolicy(
        'payments',
        config({ maxAttempts: 3, waitDuration: 0, budget: { ratio: 0.1, maxTokens } }),
        clock,
      );
      const error = new StatusError(503);
      let calls = 0;
      const down = async () => {
        calls++;
        throw error;
      };
      const requests = 100;
      for (let i = 0; i < requests; i++) await expect(drain(clock, retry.execute(down))).rejects.toBe(error);
      expect(calls).toBe(requests + maxTokens / 2);
      // requests 1 and 2 retry twice each (5 -> 1 token), request 3 once; every later request is denied once
      expect(retry.metrics.budgetDenied).toBe(requests - 2);
    });

    it('propagates the original error when the budget denies, and ten successes buy exactly one retry', async () => {
      const retry = new RetryPolicy(
        'payments',
        config({ maxAttempts: 2, waitDuration: 0, budget: { ratio: 0.1, maxTokens: 2 } }),
        clock,
      );
      const denied: string[] = [];
      retry.onRetryStopped((e) => denied.push(e.reason));
      await drain(clock, retry.execute(failing([new StatusError(503)]).fn));
      // started at 1 token, the retry took it, the call's success deposited 0.1
      expect(retry.budgetTokens).toBe(0.1);
      const error = new StatusError(503);
      await expect(drain(clock, retry.execute(failing([error]).fn))).rejects.toBe(error);
      expect(denied).toEqual(['budget']);
      for (let i = 0; i < 9; i++) await retry.execute(async () => 'fine');
      expect(retry.budgetTokens).toBe(1);
      const again = failing([new StatusError(503)]);
      await expect(drain(clock, retry.execute(again.fn))).resolves.toBe('ok');
      expect(again.calls()).toBe(2);
      expect(retry.metrics.budgetDenied).toBe(1);
    });
  });
});
