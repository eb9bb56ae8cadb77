import { VirtualClock } from '../clock';
import { contextStorage, ResilienceContext } from '../context';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  MaxRetriesExceededError,
  RateLimitedError,
  TimeoutExceededError,
} from '../errors';
import { RetryPolicy, RetryStoppedEvent } from './retry';
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
