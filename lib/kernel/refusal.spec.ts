import { firstValueFrom, Observable } from 'rxjs';
import { VirtualClock } from './clock';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  MaxRetriesExceededError,
  RateLimitedError,
  TimeoutExceededError,
} from './errors';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { StandardPipeline } from '../engine/standard-pipeline';
import { StandardLayers } from '../engine/layers';
import { layeredPipeline } from '../../test/support/pipelines';

/**
 * "Never left" is a property of the whole call: once an attempt reached the
 * method, a later attempt's refusal must not make the call look as if it
 * never left (DESIGN, "Fallback").
 */
type Kind = 'standard' | 'layered';

function compose(
  layers: StandardLayers,
  invoke: (args: unknown[]) => unknown,
  clock: VirtualClock,
  kind: Kind,
): (args: unknown[]) => Promise<unknown> {
  return kind === 'standard' ? new StandardPipeline(layers, invoke, clock).run : layeredPipeline(layers, invoke, clock);
}

/** Breaker opening on the first failure, a 1 s limit, three attempts 100 ms apart. */
function setup(kind: Kind, extra: { retry?: object; bulkhead?: boolean } = {}) {
  const clock = new VirtualClock();
  const registry = new ResilienceRegistry({
    clock,
    retry: { instances: { r: { maxAttempts: 3, waitDuration: 100, jitter: 'none', ...extra.retry } } },
    circuitBreaker: {
      instances: {
        cb: {
          slidingWindowSize: 1,
          minimumNumberOfCalls: 1,
          failureRateThreshold: 50,
          waitDurationInOpenState: 60_000,
        },
      },
    },
    timeLimiter: { instances: { tl: { timeoutDuration: 1000 } } },
    bulkhead: { instances: { bh: { maxConcurrentCalls: 1, maxWaitDuration: 0 } } },
  });
  const chosen: string[] = [];
  const fallback = new FallbackPolicy('charge', [
    {
      errors: [CallNotPermittedError, BulkheadFullError],
      handler: () => (chosen.push('rejected, not charged'), 'rejected'),
    },
    { errors: [TimeoutExceededError, DeadlineExceededError], handler: () => (chosen.push('pending'), 'pending') },
  ]);
  let effects = 0;
  // The provider charges, then never answers.
  const invoke = (): Promise<never> => {
    effects++;
    return new Promise<never>(() => undefined);
  };
  const layers: StandardLayers = {
    fallback,
    retry: registry.retry('r'),
    circuitBreaker: registry.circuitBreaker('cb'),
    timeLimiter: registry.timeLimiter('tl'),
    bulkhead: extra.bulkhead ? registry.bulkhead('bh') : undefined,
  };
  const withoutFallback = { ...layers, fallback: undefined };
  return {
    clock,
    registry,
    chosen,
    effects: () => effects,
    run: compose(layers, invoke, clock, kind),
    runWithoutFallback: compose(withoutFallback, invoke, clock, kind),
  };
}

describe.each<Kind>(['standard', 'layered'])('a refusal after an attempt reached the method (%s pipeline)', (kind) => {
  it('fails with the earlier attempt\'s timeout, the breaker refusal attached as cause, so the "not charged" fallback is never chosen', async () => {
    const s = setup(kind);
    const outcome = s.runWithoutFallback([]).catch((e: unknown) => e);
    await s.clock.advance(1000);
    expect(s.registry.circuitBreaker('cb').state).toBe('OPEN');
    await s.clock.advance(100);
    const error = (await outcome) as TimeoutExceededError;
    expect(s.effects()).toBe(1);
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(error.cause).toBeInstanceOf(CallNotPermittedError);
    expect(s.registry.retry('r').metrics).toMatchObject({ failedCallsWithRetry: 1, failedCallsWithoutRetry: 0 });

    const answered = s.run([]);
    await s.clock.advance(60_000);
    // The breaker is still open for the second call: it never left, so "not charged" is the truth there.
    await expect(answered).resolves.toBe('rejected');
    expect(s.chosen).toEqual(['rejected, not charged']);
  });

  it('answers "pending" through the fallback when the retry is refused after a timeout', async () => {
    const s = setup(kind);
    const answered = s.run([]);
    await s.clock.advance(1100);
    await expect(answered).resolves.toBe('pending');
    expect(s.chosen).toEqual(['pending']);
    expect(s.effects()).toBe(1);
  });

  it('keeps the earlier outcome when the retry is refused by a full bulkhead', async () => {
    const s = setup(kind, { bulkhead: true });
    s.registry.circuitBreaker('cb').transitionToDisabledState();
    // The first attempt's timed-out call keeps its bulkhead permit until it really ends: the retry finds it full.
    const outcome = s.runWithoutFallback([]).catch((e: unknown) => e);
    await s.clock.advance(1100);
    const error = (await outcome) as TimeoutExceededError;
    expect(s.effects()).toBe(1);
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(error.cause).toBeInstanceOf(BulkheadFullError);
  });

  it('keeps the earlier outcome when the retry is refused by the rate limiter', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      retry: { instances: { r: { maxAttempts: 3, waitDuration: 100, jitter: 'none' } } },
      rateLimiter: { instances: { rl: { limitForPeriod: 1, limitRefreshPeriod: '1h', timeoutDuration: 0 } } },
    });
    let effects = 0;
    const run = compose(
      { retry: registry.retry('r'), rateLimiter: registry.rateLimiter('rl') },
      async () => {
        effects++;
        throw Object.assign(new Error('connection reset after the charge'), { code: 'ECONNRESET' });
      },
      clock,
      kind,
    );
    const outcome = run([]).catch((e: unknown) => e);
    await clock.advance(100);
    const error = (await outcome) as Error;
    expect(effects).toBe(1);
    expect(error.message).toBe('connection reset after the charge');
    expect(error.cause).toBeInstanceOf(RateLimitedError);
  });

  it('returns the earlier result (or MaxRetriesExceededError) when a retry on a result is refused', async () => {
    for (const failAfterMaxAttempts of [false, true]) {
      const clock = new VirtualClock();
      const registry = new ResilienceRegistry({
        clock,
        retry: {
          instances: {
            r: {
              maxAttempts: 3,
              waitDuration: 100,
              jitter: 'none',
              retryOnResult: (v: unknown) => v === 'PENDING',
              failAfterMaxAttempts,
            },
          },
        },
        circuitBreaker: {
          instances: {
            cb: {
              slidingWindowSize: 1,
              minimumNumberOfCalls: 1,
              waitDurationInOpenState: 60_000,
              recordResult: (v: unknown) => v === 'PENDING',
            },
          },
        },
      });
      let effects = 0;
      const run = compose(
        { retry: registry.retry('r'), circuitBreaker: registry.circuitBreaker('cb') },
        async () => (effects++, 'PENDING'),
        clock,
        kind,
      );
      const outcome = run([]).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      await clock.advance(100);
      const settled = await outcome;
      expect(effects).toBe(1);
      if (failAfterMaxAttempts) {
        expect((settled as { error: MaxRetriesExceededError }).error).toBeInstanceOf(MaxRetriesExceededError);
        expect((settled as { error: MaxRetriesExceededError }).error.lastResult).toBe('PENDING');
        expect((settled as { error: Error }).error.cause).toBeInstanceOf(CallNotPermittedError);
      } else {
        expect(settled).toEqual({ value: 'PENDING' });
      }
    }
  });

  it('still fails with the refusal when no attempt reached the method', async () => {
    const s = setup(kind);
    s.registry.circuitBreaker('cb').transitionToForcedOpenState();
    const outcome = s.runWithoutFallback([]).catch((e: unknown) => e);
    await s.clock.advance(1000);
    expect(await outcome).toBeInstanceOf(CallNotPermittedError);
    expect(s.effects()).toBe(0);
  });
});

describe('a refusal after an attempt reached the method (Observable method)', () => {
  it("fails the subscription with the earlier attempt's timeout, the breaker refusal attached as cause", async () => {
    const s = setup('standard');
    let effects = 0;
    // Each subscription reaches the provider, which charges and never answers.
    const source = new Observable<never>(() => {
      effects++;
    });
    const retried = s.registry
      .retry('r')
      .observe(s.registry.circuitBreaker('cb').observe(s.registry.timeLimiter('tl').observe(source)));
    const outcome = firstValueFrom(retried).catch((e: unknown) => e);
    await s.clock.advance(1100);
    const error = (await outcome) as TimeoutExceededError;
    expect(effects).toBe(1);
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(error.cause).toBeInstanceOf(CallNotPermittedError);
  });
});
