import { inspect } from 'node:util';
import { BulkheadFullError, CallNotPermittedError, RateLimitedError, refusalError } from './errors';
import { isRefusal, refusal, refusedCall } from './refusal';
import { ResilienceRegistry } from '../registry/resilience.registry';

describe('the refusal mark', () => {
  it('is on the errors a policy marked, not on equal errors it did not', () => {
    const marked = refusal(new CallNotPermittedError('cb', 'OPEN'));
    expect(isRefusal(marked)).toBe(true);
    expect(isRefusal(new CallNotPermittedError('cb', 'OPEN'))).toBe(false);
    expect(isRefusal(new BulkheadFullError('pool'))).toBe(false);
  });

  it('marks any other object too', () => {
    const other = refusal(new Error('not ours'));
    expect(isRefusal(other)).toBe(true);
    expect(isRefusal(new Error('not ours'))).toBe(false);
    expect(isRefusal(undefined)).toBe(false);
    expect(isRefusal('refused')).toBe(false);
  });

  it('leaves no trace a caller can see on the error', () => {
    // Without stack traces, so that the two differ only by the mark.
    const plain = refusalError(false, RateLimitedError, 'rl', 5);
    const marked = refusal(refusalError(false, RateLimitedError, 'rl', 5));
    expect(Object.getOwnPropertyNames(marked)).toEqual(Object.getOwnPropertyNames(plain));
    expect(Object.getOwnPropertySymbols(marked)).toEqual(Object.getOwnPropertySymbols(plain));
    expect(inspect(marked, { showHidden: true })).toBe(inspect(plain, { showHidden: true }));
    expect(JSON.stringify(marked)).toBe(JSON.stringify(plain));
  });
});

describe('refusedCall', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });
  /** Lets Node report unhandled rejections (it does so after the microtasks of a macrotask). */
  const nextMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it('rejects with the error, each promise with its own, in the order they were made', async () => {
    const first = new Error('first');
    const second = new Error('second');
    const order: string[] = [];
    const a = refusedCall(first).catch((e: Error) => order.push(e.message));
    const b = refusedCall(second).catch((e: Error) => order.push(e.message));
    await Promise.all([a, b]);
    expect(order).toEqual(['first', 'second']);
    // A later batch starts afresh.
    await expect(refusedCall(first)).rejects.toBe(first);
  });

  it('is not reported when the caller handles it', async () => {
    const handled = refusedCall(new Error('handled')).catch(() => 'caught');
    await nextMacrotask();
    await expect(handled).resolves.toBe('caught');
    expect(unhandled).toEqual([]);
  });

  it("is what an open breaker's and a spent rate limiter's execute() answer", async () => {
    const registry = new ResilienceRegistry({
      rateLimiter: { instances: { rl: { limitForPeriod: 1, limitRefreshPeriod: '1h', timeoutDuration: 0 } } },
    });
    try {
      registry.circuitBreaker('cb').transitionToForcedOpenState();
      await registry.rateLimiter('rl').waitForPermission();
      let ran = 0;
      const breakerCall = registry.circuitBreaker('cb').execute(() => ++ran);
      const limiterCall = registry.rateLimiter('rl').execute(() => ++ran);
      await expect(breakerCall).rejects.toBeInstanceOf(CallNotPermittedError);
      await expect(limiterCall).rejects.toBeInstanceOf(RateLimitedError);
      expect(ran).toBe(0);
      await expect(breakerCall.catch(isRefusal)).resolves.toBe(true);
      await expect(limiterCall.catch(isRefusal)).resolves.toBe(true);
    } finally {
      registry.dispose();
    }
  });
});
