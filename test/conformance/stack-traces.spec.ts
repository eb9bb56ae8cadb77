import {
  BulkheadFullError,
  CallNotPermittedError,
  RateLimitedError,
  RateLimiterRefusedEvent,
  ResilienceRegistry,
  VirtualClock,
} from '../../lib';

/*
 * Resilience4j's `writableStackTraceEnabled` (default true): a refusal built
 * with `false` carries no stack trace, so refusing under overload costs about
 * what admitting does. Mirrors the factories that read it:
 * - CallNotPermittedException.createCallNotPermittedException(circuitBreaker)
 *   (resilience4j-circuitbreaker), from CircuitBreakerConfig.isWritableStackTraceEnabled();
 * - BulkheadFullException.createBulkheadFullException(bulkhead)
 *   (resilience4j-bulkhead), from BulkheadConfig.isWritableStackTraceEnabled();
 * - RequestNotPermitted.createRequestNotPermitted(rateLimiter)
 *   (resilience4j-ratelimiter), from RateLimiterConfig.isWritableStackTraceEnabled().
 */
const FRAME = /\n\s+at /;

function registryWith(writableStackTraceEnabled?: boolean): ResilienceRegistry {
  const setting = writableStackTraceEnabled === undefined ? {} : { writableStackTraceEnabled };
  return new ResilienceRegistry({
    clock: new VirtualClock(),
    circuitBreaker: { instances: { psp: { ...setting } } },
    bulkhead: { instances: { psp: { maxConcurrentCalls: 0, ...setting } } },
    rateLimiter: {
      instances: { psp: { limitForPeriod: 1, limitRefreshPeriod: '1m', timeoutDuration: 0, ...setting } },
    },
  });
}

async function refusals(registry: ResilienceRegistry): Promise<Error[]> {
  const breaker = registry.circuitBreaker('psp');
  breaker.transitionToForcedOpenState();
  const limiter = registry.rateLimiter('psp');
  await limiter.waitForPermission();
  const errors = await Promise.all([
    breaker.execute(async () => 'never').catch((e: Error) => e),
    registry
      .bulkhead('psp')
      .execute(async () => 'never')
      .catch((e: Error) => e),
    limiter.waitForPermission().catch((e: Error) => e),
  ]);
  expect(errors[0]).toBeInstanceOf(CallNotPermittedError);
  expect(errors[1]).toBeInstanceOf(BulkheadFullError);
  expect(errors[2]).toBeInstanceOf(RateLimitedError);
  return errors as Error[];
}

describe('writableStackTraceEnabled', () => {
  it('true by default, as in Resilience4j: each refusal carries the frames that led to it', async () => {
    for (const error of await refusals(registryWith())) expect(error.stack).toMatch(FRAME);
  });

  it('false: each refusal is its name and message alone, with its fields intact', async () => {
    const errors = await refusals(registryWith(false));
    for (const error of errors) expect(error.stack).toBe(`${error.name}: ${error.message}`);
    expect(errors[0]).toMatchObject({ instance: 'psp', state: 'FORCED_OPEN' });
    expect(errors[1]).toMatchObject({ instance: 'psp', reason: 'queue-full' });
    expect((errors[2] as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
  });

  it('leaves the stack trace of errors built afterwards as the process sets it', async () => {
    await refusals(registryWith(false));
    expect(new Error('later').stack).toMatch(FRAME);
  });

  it("the rate limiter's false and -1 answers refuse without an error, yet a listener still receives one", async () => {
    const registry = registryWith();
    const limiter = registry.rateLimiter('psp');
    expect(limiter.reservePermission()).toBe(0);
    expect(limiter.reservePermission()).toBe(-1);
    await expect(limiter.acquirePermission()).resolves.toBe(false);
    const heard: RateLimiterRefusedEvent[] = [];
    limiter.onCallNotPermitted((event) => heard.push(event));
    expect(limiter.reservePermission()).toBe(-1);
    await expect(limiter.acquirePermission()).resolves.toBe(false);
    expect(heard.map((e) => e.error.constructor)).toEqual([RateLimitedError, RateLimitedError]);
  });
});
