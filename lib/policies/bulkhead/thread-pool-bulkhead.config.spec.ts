import { VirtualClock } from '../../kernel/clock';
import { BulkheadFullError } from '../../kernel/errors';
import { BulkheadPolicy } from './bulkhead.policy';
import { asBulkhead, THREAD_POOL_QUEUE_WAIT_MS } from './thread-pool-bulkhead.config';

// Resilience4j FixedThreadPoolBulkhead: maxThreadPoolSize calls run, queueCapacity wait with no time bound of their own.
describe('asBulkhead', () => {
  it('runs maxThreadPoolSize calls at once and lets queueCapacity calls wait as long as one timer can', () => {
    expect(asBulkhead({ maxThreadPoolSize: 4, queueCapacity: 10 })).toEqual({
      maxConcurrentCalls: 4,
      queueCapacity: 10,
      maxWaitDuration: THREAD_POOL_QUEUE_WAIT_MS,
    });
    expect(THREAD_POOL_QUEUE_WAIT_MS).toBe(2_147_483_647);
  });

  it('refuses at once, with no retry hint, when the queue capacity is 0', async () => {
    const config = asBulkhead({ maxThreadPoolSize: 1, queueCapacity: 0 });
    expect(config).toEqual({ maxConcurrentCalls: 1, queueCapacity: 0, maxWaitDuration: 0 });
    const clock = new VirtualClock();
    const bulkhead = new BulkheadPolicy('pool', config, clock);
    void bulkhead.execute(() => new Promise<void>((resolve) => clock.setTimeout(resolve, 10)));
    const refused = await bulkhead.execute(() => 'never').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BulkheadFullError);
    expect(refused).toMatchObject({ reason: 'queue-full', retryAfterMs: undefined });
    await clock.advance(10);
  });
});
