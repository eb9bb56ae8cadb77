import { VirtualClock } from '../../kernel/clock';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  MaxRetriesExceededError,
  RateLimitedError,
  TimeoutExceededError,
} from '../../kernel/errors';
import { refusal } from '../../kernel/refusal';
import { RetryPolicy } from './retry.policy';
import type { RetryStoppedEvent } from './retry.events';
import { RetryConfig, RETRY_SCHEMA } from './retry.config';
import { isRetryableByDefault } from './retryable';

const unavailable = (extra: object = {}) => Object.assign(new Error('busy'), { status: 503 }, extra);

function policy(settings: Partial<RetryConfig> = {}) {
  const clock = new VirtualClock();
  const retry = new RetryPolicy(
    'r',
    { ...RETRY_SCHEMA.defaults, maxAttempts: 3, waitDuration: 100, jitter: 'none', ...settings },
    clock,
  );
  return { clock, retry };
}

/** Runs `outcomes` (one per attempt: a value, or an Error to throw) through `retry`, letting every wait pass. */
async function run(
  clock: VirtualClock,
  retry: RetryPolicy,
  outcomes: unknown[],
): Promise<{ value?: unknown; error?: unknown; calls: number; waits: number[] }> {
  let calls = 0;
  const waits: number[] = [];
  const off = retry.onRetry((e) => waits.push(e.waitMs));
  const outcome = retry
    .execute(() => {
      const next = outcomes[Math.min(calls++, outcomes.length - 1)];
      if (next instanceof Error) throw next;
      return next;
    })
    .then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  await clock.advance(100_000);
  off();
  return { ...(await outcome), calls, waits };
}

describe('RetryPolicy outcomes', () => {
  it('counts each kind of call in its own counter', async () => {
    const { clock, retry } = policy();
    await run(clock, retry, ['ok']);
    await run(clock, retry, [unavailable(), 'ok']);
    await run(clock, retry, [new Error('not retryable')]);
    await run(clock, retry, [unavailable()]);
    expect(retry.metrics).toEqual({
      successfulCallsWithoutRetry: 1,
      successfulCallsWithRetry: 1,
      failedCallsWithoutRetry: 1,
      failedCallsWithRetry: 1,
      budgetDenied: 0,
    });
  });

  it('tells success and error listeners how many attempts a call took', async () => {
    const { clock, retry } = policy();
    const seen: string[] = [];
    retry.onSuccess((e) => seen.push(`success ${e.attempts}`));
    retry.onError((e) => seen.push(`error ${e.attempts}`));
    await run(clock, retry, ['ok']);
    await run(clock, retry, [unavailable(), 'ok']);
    await run(clock, retry, [unavailable()]);
    expect(seen).toEqual(['success 1', 'success 2', 'error 3']);
  });

  it('returns a value retryOnResult does not ask to retry after one attempt', async () => {
    const { clock, retry } = policy({ retryOnResult: (value) => value === 'stale' });
    expect(await run(clock, retry, ['fresh', 'other'])).toMatchObject({ value: 'fresh', calls: 1, waits: [] });
    expect(await run(clock, retry, ['stale', 'fresh'])).toMatchObject({ value: 'fresh', calls: 2, waits: [100] });
  });

  it('fails with MaxRetriesExceededError when the budget refuses a retry of a result and failAfterMaxAttempts is set', async () => {
    // maxTokens 1 starts with half a token: no retry can be paid for.
    const { clock, retry } = policy({
      retryOnResult: () => true,
      failAfterMaxAttempts: true,
      budget: { ratio: 0.1, maxTokens: 1 },
    });
    const outcome = await run(clock, retry, ['stale']);
    expect(outcome.error).toBeInstanceOf(MaxRetriesExceededError);
    expect(outcome.calls).toBe(1);
    expect(retry.metrics.budgetDenied).toBe(1);
  });

  it('retries after a wait of 1 ms like any other', async () => {
    const { clock, retry } = policy({ waitDuration: 1 });
    expect(await run(clock, retry, [unavailable(), 'ok'])).toMatchObject({ value: 'ok', calls: 2, waits: [1] });
  });

  it('honours a Retry-After of exactly retryAfterMaxWait, and never waits less than the backoff', async () => {
    const { clock, retry } = policy({ retryAfterMaxWait: 5000 });
    expect(await run(clock, retry, [unavailable({ retryAfterMs: 5000 }), 'ok'])).toMatchObject({
      value: 'ok',
      waits: [5000],
    });
    expect(await run(clock, retry, [unavailable({ retryAfterMs: 20 }), 'ok'])).toMatchObject({
      value: 'ok',
      waits: [100],
    });
    expect(await run(clock, retry, [unavailable({ retryAfterMs: 5001 }), 'ok'])).toMatchObject({ calls: 1 });
  });

  it('does not start a retry whose wait would use up exactly the time left', async () => {
    const { clock, retry } = policy();
    const stopped: RetryStoppedEvent[] = [];
    retry.onRetryStopped((e) => stopped.push(e));
    const request = new ResilienceContext(clock, clock.now() + 100);
    const outcome = contextStorage.run(request, () =>
      retry.execute(() => {
        throw unavailable();
      }),
    );
    await expect(outcome).rejects.toThrow('busy');
    expect(stopped.map((e) => e.reason)).toEqual(['deadline']);
  });

  it('never retries its own refusals or a spent deadline by default, but does retry a timeout', () => {
    expect(isRetryableByDefault(new CallNotPermittedError('cb', 'OPEN', 1000))).toBe(false);
    expect(isRetryableByDefault(new BulkheadFullError('bh', 'queue-full', 1000))).toBe(false);
    expect(isRetryableByDefault(new DeadlineExceededError())).toBe(false);
    expect(isRetryableByDefault(new RateLimitedError('rl', 1000))).toBe(false);
    expect(isRetryableByDefault(new TimeoutExceededError('tl', 500))).toBe(true);
  });

  it('never retries a refusal by default even when it carries a retryable HTTP status', () => {
    const withStatus = <E extends Error>(error: E): E => Object.assign(error, { status: 503 });
    expect(isRetryableByDefault(withStatus(new CallNotPermittedError('cb', 'OPEN', 1000)))).toBe(false);
    expect(isRetryableByDefault(withStatus(new BulkheadFullError('bh', 'queue-full', 1000)))).toBe(false);
    expect(isRetryableByDefault(withStatus(new DeadlineExceededError()))).toBe(false);
    expect(isRetryableByDefault(withStatus(new RateLimitedError('rl', 1000)))).toBe(false);
    expect(isRetryableByDefault(withStatus(new Error('plain')))).toBe(true);
  });
});

describe('RetryPolicy edges', () => {
  it('reports no budget tokens without a budget', () => {
    expect(policy().retry.budgetTokens).toBeUndefined();
  });

  it('retries at once, without waiting on the clock, when the wait is 0', async () => {
    const { retry } = policy({ waitDuration: 0 });
    let calls = 0;
    const outcome = retry.execute(async () => {
      if (calls++ === 0) throw unavailable();
      return 'second';
    });
    await VirtualClock.settle();
    await expect(outcome).resolves.toBe('second');
    expect(calls).toBe(2);
  });

  it('stops with reason deadline, ending with the last error of the method, when the request was aborted during an attempt, even with time left', async () => {
    const { clock, retry } = policy();
    const stopped: string[] = [];
    retry.onRetryStopped((e) => stopped.push(e.reason));
    const request = new ResilienceContext(clock, clock.now() + 60_000);
    const reason = new Error('client left');
    const failure = unavailable();
    const outcome = contextStorage.run(request, () =>
      retry.execute(() => {
        request.abort(reason);
        return Promise.reject(failure);
      }),
    );
    // As Resilience4j and cockatiel: a cancelled retry ends with the method's last error, not the abort.
    await expect(outcome).rejects.toBe(failure);
    expect(stopped).toEqual(['deadline']);
    request.dispose();
  });

  it('tells why it stopped: not retryable, attempts spent, Retry-After too long, budget', async () => {
    const stoppedBy = async (settings: Partial<RetryConfig>, outcomes: unknown[]) => {
      const { clock, retry } = policy(settings);
      const stopped: RetryStoppedEvent[] = [];
      retry.onRetryStopped((e) => stopped.push(e));
      const { error } = await run(clock, retry, outcomes);
      return stopped.map((e) => [e.name, e.attempt, e.reason, e.error === error]);
    };
    expect(await stoppedBy({}, [new TypeError('bug')])).toEqual([['r', 1, 'not-retryable', true]]);
    expect(await stoppedBy({}, [unavailable()])).toEqual([['r', 3, 'max-attempts', true]]);
    expect(await stoppedBy({ retryAfterMaxWait: 10 }, [unavailable({ retryAfterMs: 11 })])).toEqual([
      ['r', 1, 'retry-after-too-long', true],
    ]);
    expect(await stoppedBy({ budget: { ratio: 0.1, maxTokens: 1 } }, [unavailable()])).toEqual([
      ['r', 1, 'budget', true],
    ]);
  });

  it('ends with the last refusal when every attempt was refused', async () => {
    // The first attempt is refused too (and retried, as listed): no attempt's outcome is known but the last.
    const { clock, retry } = policy({ retryExceptions: ['BulkheadFullError'] });
    const first = refusal(new BulkheadFullError('pool', 'queue-full'));
    const last = refusal(new CallNotPermittedError('cb', 'OPEN'));
    const outcome = await run(clock, retry, [first, last]);
    expect(outcome.calls).toBe(2);
    expect(outcome.error).toBe(last);
    expect(first.cause).toBeUndefined();
  });

  it('ends with the latest error that reached the method, not an earlier result, when a retry is refused', async () => {
    const { clock, retry } = policy({ retryOnResult: (value) => value === 'stale' });
    const reached = unavailable();
    const refused = refusal(new CallNotPermittedError('cb', 'OPEN'));
    const outcome = await run(clock, retry, ['stale', reached, refused]);
    expect(outcome.calls).toBe(3);
    expect(outcome.error).toBe(reached);
    expect(reached.cause).toBe(refused);
    expect(retry.metrics).toMatchObject({ failedCallsWithRetry: 1 });
  });

  it('keeps the error that reached the method through several refused retries after it', async () => {
    const { clock, retry } = policy({ retryExceptions: [Error] });
    const reached = unavailable();
    const queued = refusal(new BulkheadFullError('pool', 'queue-full'));
    const last = refusal(new CallNotPermittedError('cb', 'OPEN'));
    const outcome = await run(clock, retry, [reached, queued, last]);
    expect(outcome.calls).toBe(3);
    expect(outcome.error).toBe(reached);
    expect(reached.cause).toBe(last);
  });

  it('ends with the latest result that reached the method when a retry after an error is refused', async () => {
    const { clock, retry } = policy({ retryOnResult: (value) => value === 'stale', maxAttempts: 4 });
    const refused = refusal(new CallNotPermittedError('cb', 'OPEN'));
    const outcome = await run(clock, retry, [unavailable(), 'stale', refused]);
    expect(outcome).toMatchObject({ value: 'stale', calls: 3 });
    expect(retry.metrics).toMatchObject({ failedCallsWithRetry: 1, successfulCallsWithRetry: 0 });
  });
});
