import { defer, lastValueFrom, of } from 'rxjs';
import { VirtualClock } from '../clock';
import { MaxRetriesExceededError } from '../errors';
import { RetryPolicy } from './retry';
import { RETRY_SCHEMA, RetryConfig } from './retry.config';

const config = (overrides: Partial<RetryConfig> = {}): RetryConfig => ({
  ...RETRY_SCHEMA.defaults,
  jitter: 'none',
  ...overrides,
});
const retryOnResult = (r: unknown) => (r as { status: string }).status === 'PENDING';

// Resilience4j RetryImpl: a result still retryable when attempts run out is a failed call with retry (ERROR), not a success.
describe('RetryPolicy.observe with retryOnResult', () => {
  it('re-subscribes while the value asks for a retry, then lets the last value out counted as failed with retry', async () => {
    const clock = new VirtualClock();
    const policy = new RetryPolicy('poll', config({ maxAttempts: 3, waitDuration: 5, retryOnResult }), clock);
    let subscriptions = 0;
    const outcomes: string[] = [];
    policy.onSuccess(() => outcomes.push('SUCCESS'));
    policy.onError(() => outcomes.push('ERROR'));
    const result = lastValueFrom(policy.observe(defer(() => (subscriptions++, of({ status: 'PENDING' })))));
    await clock.advance(10);
    await expect(result).resolves.toEqual({ status: 'PENDING' });
    expect(subscriptions).toBe(3);
    expect(policy.metrics).toMatchObject({
      failedCallsWithRetry: 1,
      successfulCallsWithRetry: 0,
      successfulCallsWithoutRetry: 0,
    });
    expect(outcomes).toEqual(['ERROR']);
  });

  it('errors with MaxRetriesExceededError when failAfterMaxAttempts, counted once', async () => {
    const clock = new VirtualClock();
    const policy = new RetryPolicy(
      'poll',
      config({ maxAttempts: 2, waitDuration: 5, retryOnResult, failAfterMaxAttempts: true }),
      clock,
    );
    const result = lastValueFrom(policy.observe(of({ status: 'PENDING' })));
    const settled = expect(result).rejects.toBeInstanceOf(MaxRetriesExceededError);
    await clock.advance(5);
    await settled;
    expect(policy.metrics).toMatchObject({ failedCallsWithRetry: 1, successfulCallsWithRetry: 0 });
  });
});
