import { Injectable, Logger, Module, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  CallNotPermittedError,
  CircuitBreaker,
  Fallback,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import { UNKNOWN_INSTANCE } from '../../lib/config/config.messages';
import { FALLBACK_HANDLER_MISSING } from '../../lib/policies/fallback/fallback.messages';
import { DECORATOR_ON_NON_METHOD, REQUEST_SCOPED } from '../../lib/kernel/resilience.messages';

class Unavailable extends Error {
  readonly status = 503;
}

/** The first attempt hangs for 1.5 s, later ones answer at once. */
@Injectable()
class TopDown {
  attempts = 0;
  constructor(private readonly clock: VirtualClock) {}

  @Retry('r')
  @Timeout(1000)
  async call(): Promise<number> {
    return this.work();
  }

  async work(): Promise<number> {
    const attempt = ++this.attempts;
    if (attempt === 1) await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 1500));
    return attempt;
  }
}

@Injectable()
class BottomUp extends TopDown {
  @Timeout(1000)
  @Retry('r')
  override async call(): Promise<number> {
    return this.work();
  }
}

@Injectable()
class Payments {
  calls = 0;

  @Fallback(Error, 'pending')
  @Fallback(CallNotPermittedError, 'rejected')
  @CircuitBreaker('psp')
  @Retry('psp')
  async charge(_orderId: string, fail: Error): Promise<string> {
    this.calls++;
    throw fail;
  }

  rejected(orderId: string, _fail: Error, error: CallNotPermittedError): string {
    return `rejected ${orderId}: not charged (${error.state})`;
  }

  pending(orderId: string, _fail: Error, error: Error): string {
    return `pending ${orderId}: outcome unknown (${error.message})`;
  }
}

async function boot(providers: unknown[], options: ResilienceModuleOptions = {}) {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock, random: () => 0, ...options })],
    providers: [{ provide: VirtualClock, useValue: clock }, ...(providers as never[])],
  }).compile();
  moduleRef.useLogger(false);
  return { moduleRef: await moduleRef.init(), clock };
}

describe('pipeline composition', () => {
  it.each([
    ['@Retry above @Timeout', TopDown],
    ['@Timeout above @Retry', BottomUp],
  ])('%s: the time limit applies per attempt inside the retry', async (_label, cls) => {
    const { moduleRef, clock } = await boot([cls], { retry: { instances: { r: { waitDuration: 0 } } } });
    const service = moduleRef.get<TopDown>(cls);
    const result = service.call();
    await clock.advance(1000);
    await expect(result).resolves.toBe(2);
    const retry = moduleRef.get(ResilienceRegistry).retry('r');
    expect(retry.metrics.successfulCallsWithRetry).toBe(1);
    await moduleRef.close();
  });

  it('the order option can put the timeout outside the retry', async () => {
    const { moduleRef, clock } = await boot([TopDown], {
      order: ['idempotent', 'fallback', 'timeLimiter', 'retry', 'circuitBreaker', 'rateLimiter', 'bulkhead'],
      retry: { instances: { r: { waitDuration: 0 } } },
    });
    const result = moduleRef
      .get(TopDown)
      .call()
      .catch((e) => e);
    await clock.advance(1000);
    expect(await result).toBeInstanceOf(TimeoutExceededError);
    await moduleRef.close();
  });

  it('chooses the fallback by error class: a refused call and an unknown outcome get opposite answers', async () => {
    const { moduleRef } = await boot([Payments], {
      circuitBreaker: {
        instances: { psp: { slidingWindowSize: 2, minimumNumberOfCalls: 2, failureRateThreshold: 100 } },
      },
      retry: { instances: { psp: { maxAttempts: 1 } } },
    });
    const payments = moduleRef.get(Payments);
    await expect(payments.charge('o-1', new Error('socket hang up'))).resolves.toBe(
      'pending o-1: outcome unknown (socket hang up)',
    );
    await expect(payments.charge('o-2', new Unavailable('busy'))).resolves.toBe('pending o-2: outcome unknown (busy)');
    await expect(payments.charge('o-3', new Error('never sent'))).resolves.toBe('rejected o-3: not charged (OPEN)');
    expect(payments.calls).toBe(2);
    await moduleRef.close();
  });

  it('fails bootstrap when a fallback names a method that does not exist', async () => {
    @Injectable()
    class Broken {
      // @ts-expect-error tsc refuses the name too; bootstrap still checks it for code the compiler did not see
      @Fallback(Error, 'missing')
      async run(): Promise<void> {}
    }
    await expect(boot([Broken])).rejects.toThrow(FALLBACK_HANDLER_MISSING('Broken.run', 'missing'));
  });

  it('strict mode fails bootstrap on a decorator naming an undeclared instance', async () => {
    @Injectable()
    class Typo {
      @Retry('invntory')
      async run(): Promise<void> {}
    }
    await expect(boot([Typo], { strict: true, retry: { instances: { inventory: {} } } })).rejects.toThrow(
      UNKNOWN_INSTANCE('retry', 'invntory', '@Retry on Typo.run'),
    );
  });

  it('refuses a decorator on something that is not a method', () => {
    const apply = () => {
      class Holder {
        value = 1;
      }
      (Retry('x') as PropertyDecorator)(Holder.prototype, 'value');
    };
    expect(apply).toThrow(DECORATOR_ON_NON_METHOD('Retry', 'Holder.value'));
  });

  it('two applications in one process keep separate registries and breaker state', async () => {
    const options = {
      circuitBreaker: { instances: { psp: { slidingWindowSize: 2, minimumNumberOfCalls: 2 } } },
      retry: { instances: { psp: { maxAttempts: 1 } } },
    };
    const a = await boot([Payments], options);
    const b = await boot([Payments], options);
    await a.moduleRef.get(Payments).charge('1', new Error('x'));
    await a.moduleRef.get(Payments).charge('2', new Error('x'));
    expect(a.moduleRef.get(ResilienceRegistry).circuitBreaker('psp').state).toBe('OPEN');
    expect(b.moduleRef.get(ResilienceRegistry).circuitBreaker('psp').state).toBe('CLOSED');
    expect(a.moduleRef.get(ResilienceRegistry)).not.toBe(b.moduleRef.get(ResilienceRegistry));
    await a.moduleRef.close();
    await b.moduleRef.close();
  });

  it('warns once at bootstrap for a request-scoped provider', async () => {
    const warnings: string[] = [];
    const spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @Retry('r')
      async run(): Promise<string> {
        return 'ran';
      }
    }
    @Module({ providers: [PerRequest] })
    class Feature {}
    const clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock }), Feature],
    }).compile();
    await moduleRef.init();
    expect(warnings.filter((w) => w === REQUEST_SCOPED('PerRequest.run'))).toHaveLength(1);
    spy.mockRestore();
    await moduleRef.close();
  });
});
