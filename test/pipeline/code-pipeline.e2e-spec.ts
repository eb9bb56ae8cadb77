import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { lastValueFrom, Observable, toArray } from 'rxjs';
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

class Unavailable extends Error {
  readonly status = 503;
}

type Behaviour = 'ok' | 'fail' | 'hang';

/** One answer per call, in the order given; each subscription or call takes the next. */
class Script {
  private next = 0;
  constructor(
    private readonly clock: VirtualClock,
    private readonly steps: readonly Behaviour[],
  ) {}

  private take(): Behaviour {
    return this.steps[this.next++ % this.steps.length];
  }

  call(): Promise<string> {
    const step = this.take();
    if (step === 'fail') return Promise.reject(new Unavailable('down'));
    return new Promise((resolve) => this.clock.setTimeout(() => resolve('value'), step === 'hang' ? 5_000 : 10));
  }

  observable(): Observable<string> {
    return new Observable<string>((subscriber) => {
      const step = this.take();
      if (step === 'fail') return subscriber.error(new Unavailable('down'));
      const timer = this.clock.setTimeout(
        () => {
          subscriber.next('value');
          subscriber.complete();
        },
        step === 'hang' ? 5_000 : 10,
      );
      return () => this.clock.clearTimeout(timer);
    });
  }
}

const POLICY = {
  retry: { maxAttempts: 2, waitDuration: 100 },
  circuitBreaker: {
    slidingWindowSize: 4,
    minimumNumberOfCalls: 4,
    failureRateThreshold: 50,
    waitDurationInOpenState: 1000,
  },
  timeLimiter: { timeoutDuration: 200 },
};

/** The same policies under two names: `dec` for the decorated methods, `code` for the pipeline. */
function options(clock: VirtualClock, extra: Partial<ResilienceModuleOptions> = {}): ResilienceModuleOptions {
  return {
    clock,
    random: () => 0.5,
    metrics: false,
    retry: { instances: { dec: POLICY.retry, code: POLICY.retry } },
    circuitBreaker: { instances: { dec: POLICY.circuitBreaker, code: POLICY.circuitBreaker } },
    timeLimiter: { instances: { dec: POLICY.timeLimiter, code: POLICY.timeLimiter } },
    ...extra,
  };
}

const answerWhenRefused = (): string => 'refused';

@Injectable()
class Decorated {
  script!: Script;

  @Fallback(CallNotPermittedError, answerWhenRefused)
  @Retry('dec')
  @CircuitBreaker('dec')
  @Timeout('dec')
  call(): Promise<string> {
    return this.script.call();
  }

  @Fallback(CallNotPermittedError, answerWhenRefused)
  @Retry('dec')
  @CircuitBreaker('dec')
  @Timeout('dec')
  observe(): Observable<string> {
    return this.script.observable();
  }
}

async function boot(clock: VirtualClock, extra: Partial<ResilienceModuleOptions> = {}) {
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot(options(clock, extra))],
    providers: [Decorated],
  }).compile();
  await moduleRef.init();
  return { moduleRef, registry: moduleRef.get(ResilienceRegistry), decorated: moduleRef.get(Decorated) };
}

/** Every event of the instances named `name`, with the name left out so two sides compare. */
function record(registry: ResilienceRegistry, clock: VirtualClock, name: string): string[] {
  const events: string[] = [];
  const at = (text: string) => events.push(`${clock.now()} ${text}`);
  const label = (error: unknown) => (error as Error).constructor.name;
  const retry = registry.retry(name);
  const breaker = registry.circuitBreaker(name);
  const limiter = registry.timeLimiter(name);
  retry.onRetry((e) => at(`retry ${e.attempt} ${label(e.error)}`));
  retry.onError((e) => at(`retry-error ${e.attempts} ${label(e.error)}`));
  retry.onSuccess((e) => at(`retry-success ${e.attempts}`));
  breaker.onStateTransition((e) => at(`breaker ${e.from}->${e.to}`));
  breaker.onCallNotPermitted(() => at('breaker not-permitted'));
  breaker.onSuccess((e) => at(`breaker success ${e.durationMs}`));
  breaker.onError((e) => at(`breaker error ${e.durationMs} ${label(e.error)}`));
  limiter.onTimeout(() => at('limiter timeout'));
  limiter.onSuccess(() => at('limiter success'));
  return events;
}

const STEPS: readonly Behaviour[] = ['ok', 'fail', 'fail', 'hang', 'fail', 'fail', 'ok', 'hang', 'ok', 'ok', 'ok'];

describe('registry.pipeline against the decorated method', () => {
  it.each(['promise', 'observable'] as const)(
    'gives the same outcomes and the same event sequence (%s)',
    async (shape) => {
      const clock = new VirtualClock();
      const { moduleRef, registry, decorated } = await boot(clock);
      const pipeline = registry.pipeline({
        name: 'code',
        retry: 'code',
        circuitBreaker: 'code',
        timeLimiter: 'code',
        fallback: { errors: CallNotPermittedError, handler: answerWhenRefused },
      });
      decorated.script = new Script(clock, STEPS);
      const codeScript = new Script(clock, STEPS);
      const sides = [
        {
          events: record(registry, clock, 'dec'),
          run: () => (shape === 'promise' ? decorated.call() : lastValueFrom(decorated.observe().pipe(toArray()))),
        },
        {
          events: record(registry, clock, 'code'),
          run: () =>
            shape === 'promise'
              ? pipeline.execute(() => codeScript.call())
              : lastValueFrom(pipeline.observe(codeScript.observable()).pipe(toArray())),
        },
      ];
      const outcomes: string[][] = [[], []];
      for (let call = 0; call < 8; call++) {
        for (const [i, side] of sides.entries())
          side.run().then(
            (value) => outcomes[i].push(`${clock.now()} ${JSON.stringify(value)}`),
            (error: unknown) => outcomes[i].push(`${clock.now()} ${(error as Error).constructor.name}`),
          );
        await clock.advance(400);
      }
      await clock.advance(2_000);
      expect(outcomes[1]).toEqual(outcomes[0]);
      expect(sides[1].events).toEqual(sides[0].events);
      // The script reached the interesting states: a timeout, a retry, the breaker open and a refusal answered by the fallback.
      expect(sides[0].events.some((e) => e.endsWith('limiter timeout'))).toBe(true);
      expect(sides[0].events.some((e) => e.includes('breaker CLOSED->OPEN'))).toBe(true);
      expect(outcomes[0].some((o) => o.endsWith('"refused"') || o.endsWith('["refused"]'))).toBe(true);
      expect(outcomes[0].some((o) => o.endsWith('TimeoutExceededError'))).toBe(true);
      await moduleRef.close();
    },
  );

  it('nests its layers in the module option order, whatever order they are listed in', async () => {
    const clock = new VirtualClock();
    const order = [
      'idempotent',
      'fallback',
      'timeLimiter',
      'retry',
      'circuitBreaker',
      'rateLimiter',
      'bulkhead',
    ] as const;
    const { moduleRef, registry } = await boot(clock, { order: [...order] });
    const pipeline = registry.pipeline({ circuitBreaker: 'code', retry: 'code', timeLimiter: 'code' });
    expect(pipeline.layers).toEqual([
      ['timeLimiter', 'code'],
      ['retry', 'code'],
      ['circuitBreaker', 'code'],
    ]);
    // The time limit is now around the retries: one 200 ms limit for both attempts of a call that fails once.
    const script = new Script(clock, ['fail', 'hang']);
    const outcome = pipeline.execute(() => script.call()).catch((error: unknown) => error);
    await clock.advance(200);
    expect(await outcome).toBeInstanceOf(TimeoutExceededError);
    expect(registry.pipeline('code').layers.map(([kind]) => kind)).toEqual(['timeLimiter', 'retry', 'circuitBreaker']);
    await moduleRef.close();
  });

  it("counts its fallback's calls and answers on the metrics the dashboard reads", async () => {
    const clock = new VirtualClock();
    const metrics = new Registry();
    const { moduleRef, registry } = await boot(clock, { metrics: { registry: metrics } });
    const quotes = registry.pipeline({
      name: 'quotes',
      circuitBreaker: 'code',
      fallback: { errors: Unavailable, handler: () => 'cached' },
    });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await quotes.execute(() => Promise.reject(new Unavailable('down'))));
    answers.push(await quotes.execute(() => 'live'));
    expect(answers).toEqual(['cached', 'cached', 'cached', 'live']);
    const text = await metrics.metrics();
    expect(text).toContain('resilience4nest_fallback_calls_total{name="quotes",kind="Unavailable"} 3');
    expect(text).toContain('resilience4nest_fallback_guarded_calls_total{name="quotes"} 4');
    await moduleRef.close();
  });
});
