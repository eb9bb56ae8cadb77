import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Bulkhead } from '../bulkhead/bulkhead.decorator';
import { CircuitBreaker } from '../circuit-breaker/circuit-breaker.decorator';
import { VirtualClock } from '../../kernel/clock';
import { ResilienceModuleOptions } from '../../options/resilience.options';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { DeadlineExceededError, RateLimitedError } from '../../kernel/errors';
import { ResilienceModule } from '../../nest/resilience.module';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { Retry } from '../retry/retry.decorator';
import { Timeout } from '../time-limiter/time-limiter.decorator';
import { RateLimiter } from './rate-limiter.decorator';
import { RateLimiterPolicy } from './rate-limiter.policy';
import { RateLimiterStore } from './rate-limiter-store';
import { NOT_A_STORE, SHARED_WITHOUT_STORE } from './rate-limiter.messages';

const TWO_PER_SECOND = { limitForPeriod: 2, limitRefreshPeriod: '1s', timeoutDuration: 0 };

@Injectable()
class Partner {
  calls = 0;

  @RateLimiter('partner')
  async quote(): Promise<number> {
    return ++this.calls;
  }

  @Retry('partner')
  @RateLimiter('partner')
  async retried(): Promise<number> {
    return ++this.calls;
  }

  @RateLimiter('slow')
  @Timeout(100)
  async limitedThenTimed(): Promise<number> {
    return ++this.calls;
  }

  @RateLimiter('slow')
  @Bulkhead('one')
  async waitsOutsideBulkhead(hold: Promise<void>): Promise<number> {
    await hold;
    return ++this.calls;
  }

  @CircuitBreaker('partner')
  @RateLimiter('tooMany', {
    drainPermissionsOnResult: (outcome) => outcome.failed && (outcome.error as { status?: number }).status === 429,
  })
  async upstream(status: number): Promise<string> {
    this.calls++;
    if (status !== 200) throw Object.assign(new Error(`upstream answered ${status}`), { status });
    return 'ok';
  }
}

async function boot(
  options: ResilienceModuleOptions = {},
): Promise<{ partner: Partner; registry: ResilienceRegistry; clock: VirtualClock }> {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({
        clock,
        rateLimiter: {
          instances: {
            partner: TWO_PER_SECOND,
            slow: { limitForPeriod: 1, limitRefreshPeriod: '500ms', timeoutDuration: '1s' },
            tooMany: { limitForPeriod: 10, limitRefreshPeriod: '1s', timeoutDuration: 0 },
          },
        },
        bulkhead: { instances: { one: { maxConcurrentCalls: 1 } } },
        ...options,
      }),
    ],
    providers: [Partner],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return { partner: moduleRef.get(Partner), registry: moduleRef.get(ResilienceRegistry), clock };
}

describe('@RateLimiter in the pipeline', () => {
  it('admits limitForPeriod calls per period and refuses the next with the time until the next period', async () => {
    const { partner, clock } = await boot();
    await clock.advance(300);
    expect(await partner.quote()).toBe(1);
    expect(await partner.quote()).toBe(2);
    const refusal = await partner.quote().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RateLimitedError);
    expect((refusal as RateLimitedError).retryAfterMs).toBe(700);
    expect(partner.calls).toBe(2);
    await clock.advance(700);
    expect(await partner.quote()).toBe(3);
  });

  it('is a refusal to retry: RateLimitedError is not retried, and the method ran only for permitted calls', async () => {
    const { partner, registry } = await boot({
      retry: { instances: { partner: { maxAttempts: 3, waitDuration: 0 } } },
    });
    await partner.retried();
    await partner.retried();
    await expect(partner.retried()).rejects.toBeInstanceOf(RateLimitedError);
    expect(partner.calls).toBe(2);
    expect(registry.retry('partner').metrics).toMatchObject({
      successfulCallsWithoutRetry: 2,
      failedCallsWithoutRetry: 1,
      failedCallsWithRetry: 0,
    });
  });

  it('sits outside the time limit: waiting for a permit does not count against @Timeout', async () => {
    const { partner, clock } = await boot();
    expect(await partner.limitedThenTimed()).toBe(1);
    const second = partner.limitedThenTimed();
    await clock.advance(499);
    expect(partner.calls).toBe(1);
    await clock.advance(1);
    await expect(second).resolves.toBe(2);
  });

  it('sits outside the bulkhead: a caller waiting for a permit holds no bulkhead permit', async () => {
    const { partner, registry, clock } = await boot();
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const first = partner.waitsOutsideBulkhead(hold);
    await VirtualClock.settle();
    const second = partner.waitsOutsideBulkhead(Promise.resolve());
    await VirtualClock.settle();
    expect(registry.bulkhead('one').metrics.availableConcurrentCalls).toBe(0);
    expect(registry.rateLimiter('slow').metrics.numberOfWaitingThreads).toBe(1);
    release();
    await expect(first).resolves.toBe(1);
    expect(registry.bulkhead('one').metrics.availableConcurrentCalls).toBe(1);
    await clock.advance(500);
    await expect(second).resolves.toBe(2);
  });

  it('drains the period when drainPermissionsOnResult says so (an upstream 429), until the next period', async () => {
    const { partner, registry, clock } = await boot();
    expect(await partner.upstream(200)).toBe('ok');
    await expect(partner.upstream(429)).rejects.toMatchObject({ status: 429 });
    const own = registry.derivedInstances.find((d) => d.policy === 'rateLimiter' && d.name === 'tooMany')
      ?.instance as RateLimiterPolicy;
    expect(own.metrics.availablePermissions).toBe(0);
    await expect(partner.upstream(200)).rejects.toBeInstanceOf(RateLimitedError);
    expect(partner.calls).toBe(2);
    await clock.advance(1000);
    expect(await partner.upstream(200)).toBe('ok');
  });

  it('composes the same way with a custom order (the generic path)', async () => {
    const order = [
      'idempotent',
      'fallback',
      'retry',
      'circuitBreaker',
      'timeLimiter',
      'rateLimiter',
      'bulkhead',
    ] as const;
    const { partner } = await boot({ order });
    await partner.quote();
    await partner.quote();
    await expect(partner.quote()).rejects.toBeInstanceOf(RateLimitedError);
    expect(partner.calls).toBe(2);
  });
});

describe('RateLimiterPolicy waits never past the request deadline', () => {
  const limiterAt = async (): Promise<{ clock: VirtualClock; registry: ResilienceRegistry }> => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      rateLimiter: { instances: { api: { limitForPeriod: 1, limitRefreshPeriod: '1s', timeoutDuration: '5s' } } },
    });
    await registry.rateLimiter('api').execute(async () => undefined);
    return { clock, registry };
  };
  const inScope = <T>(clock: VirtualClock, remainingMs: number, fn: () => Promise<T>): Promise<T> =>
    contextStorage.run(new ResilienceContext(clock, clock.now() + remainingMs), fn);

  it('refuses at once with DeadlineExceededError when the permit comes after the deadline, reserving nothing', async () => {
    const { clock, registry } = await limiterAt();
    const limiter = registry.rateLimiter('api');
    const outcome = await inScope(clock, 1000, () =>
      limiter.execute(async () => 'ran').catch((error: unknown) => error),
    );
    expect(outcome).toBeInstanceOf(DeadlineExceededError);
    expect(limiter.metrics).toEqual({ availablePermissions: 0, numberOfWaitingThreads: 0 });
  });

  it('waits for the permit when it comes before the deadline', async () => {
    const { clock, registry } = await limiterAt();
    const pending = inScope(clock, 1001, () => registry.rateLimiter('api').execute(async () => 'ran'));
    await clock.advance(1000);
    await expect(pending).resolves.toBe('ran');
  });

  it('allows a wait of exactly timeoutDuration, refuses one a nanosecond longer', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      rateLimiter: {
        configs: { default: { limitForPeriod: 1, limitRefreshPeriod: '1s', timeoutDuration: '1s' } },
        instances: { over: { timeoutDuration: '999999999ns' } },
      },
    });
    const exact = registry.rateLimiter('exact');
    expect(exact.reservePermission()).toBe(0);
    expect(exact.reservePermission()).toBe(1000);
    const over = registry.rateLimiter('over');
    expect(over.reservePermission()).toBe(0);
    expect(over.reservePermission()).toBe(-1);
  });
});

describe('rateLimiter options', () => {
  it('reads Resilience4j spelling and kebab-case keys', () => {
    const registry = new ResilienceRegistry({
      ratelimiter: {
        instances: { a: { 'limit-for-period': 5, 'limit-refresh-period': '10s', 'timeout-duration': '0' } },
      },
    } as never);
    expect(registry.rateLimiter('a').config).toMatchObject({
      limitForPeriod: 5,
      limitRefreshPeriod: 10_000,
      timeoutDuration: 0,
    });
  });

  it('names the instance, key and value of a bad setting', () => {
    expect(
      () => new ResilienceRegistry({ rateLimiter: { instances: { api: { limitForPeriod: 'many' as never } } } }),
    ).toThrow(
      "resilience4nest: invalid configuration of rateLimiter instance 'api': key 'limitForPeriod' must be an integer >= 1, got \"many\"",
    );
    expect(
      () => new ResilienceRegistry({ rateLimiter: { instances: { api: { limitForPerod: 5 } as never } } }),
    ).toThrow(/unknown key 'limitForPerod' \(did you mean 'limitForPeriod'\?\)/);
  });

  it('fails startup when an instance is shared but no rateLimiterStore is given', () => {
    expect(() => new ResilienceRegistry({ rateLimiter: { instances: { api: { shared: true } } } })).toThrow(
      SHARED_WITHOUT_STORE("rateLimiter instance 'api'"),
    );
    expect(() => new ResilienceRegistry({ rateLimiter: { configs: { default: { shared: true } } } })).toThrow(
      SHARED_WITHOUT_STORE("rateLimiter config 'default'"),
    );
  });

  it('fails startup when a decorator override makes a limiter shared without a store', async () => {
    @Injectable()
    class Overridden {
      @RateLimiter('api', { shared: true })
      async call(): Promise<void> {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({})],
      providers: [Overridden],
    }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(
      SHARED_WITHOUT_STORE("rateLimiter @RateLimiter('api') on Overridden.call"),
    );
  });

  it('refuses a rateLimiterStore that is not one', () => {
    expect(() => new ResilienceRegistry({ rateLimiterStore: {} as RateLimiterStore })).toThrow(NOT_A_STORE('{}'));
  });

  it('checks changeLimitForPeriod and changeTimeoutDuration like the options', () => {
    const limiter = new ResilienceRegistry().rateLimiter('api');
    expect(() => limiter.changeLimitForPeriod(0)).toThrow(
      "rateLimiter instance 'api': key 'limitForPeriod' must be an integer >= 1, got 0",
    );
    expect(() => limiter.changeTimeoutDuration('soon')).toThrow(
      /rateLimiter instance 'api': key 'timeoutDuration' must be a non-negative duration.*got "soon"/,
    );
  });
});
