import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { context, propagation, Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { contextStorage } from '../../lib/kernel/context';
import {
  Bulkhead,
  CircuitBreaker,
  Idempotent,
  DeadlinePropagator,
  Fallback,
  Hedge,
  RateLimiter,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  ResilienceTracing,
  Retry,
  Timeout,
  VirtualClock,
} from '../../lib';
import { ResilienceContext } from '../../lib/kernel/context';

class Unavailable extends Error {
  readonly status = 503;
}

/** A payment provider's refusal whose text carries what must not reach a trace: a card number and a token. */
class CardDeclined extends Error {
  readonly code = 'card_declined';
  readonly status = 402;
}
const DECLINED_TEXT = 'card 4111 1111 1111 1111 declined for token tok_live_9f8e7d';

@Injectable()
class Inventory {
  calls = 0;
  constructor(private readonly clock: VirtualClock) {}

  @Fallback(Unavailable, 'cached')
  @Retry('inventory')
  async stock(): Promise<number> {
    this.calls++;
    throw new Unavailable('inventory down');
  }

  cached(): number {
    return -1;
  }

  @Hedge('catalog', { safe: true })
  async product(): Promise<number> {
    const n = ++this.calls;
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, n === 1 ? 1000 : 20));
    return n;
  }

  @Hedge('catalog', { safe: true, key: (region: string) => region })
  async productIn(_region: string): Promise<number> {
    const n = ++this.calls;
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, n === 1 ? 1000 : 20));
    return n;
  }

  @Timeout('slow')
  async slow(): Promise<void> {
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 1000));
  }

  @Timeout('slow')
  async outgoingHeaders(): Promise<Record<string, string>> {
    const headers: Record<string, string> = {};
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 20));
    propagation.inject(context.active(), headers);
    return headers;
  }

  @CircuitBreaker('open')
  async guarded(): Promise<void> {}

  @CircuitBreaker('open', { key: (host: string) => host })
  async guardedPerHost(_host: string): Promise<void> {}

  @Bulkhead('closed')
  async walledOff(): Promise<void> {}

  @Bulkhead('single')
  async oneAtATime(): Promise<void> {
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 100));
  }

  @Idempotent({ key: (id: string) => id })
  async reserve(id: string): Promise<string> {
    return `reserved ${id}`;
  }

  @RateLimiter('paced')
  async paced(): Promise<void> {}

  @Retry('inventory')
  async charge(): Promise<void> {
    this.calls++;
    throw new CardDeclined(DECLINED_TEXT);
  }
}

const OPTIONS: ResilienceModuleOptions = {
  retry: { instances: { inventory: { maxAttempts: 3, waitDuration: 100 } } },
  hedging: { instances: { catalog: { delay: 100 } } },
  timeLimiter: { instances: { slow: { timeoutDuration: 50 } } },
  bulkhead: {
    instances: { closed: { maxConcurrentCalls: 0 }, single: { maxConcurrentCalls: 1, maxWaitDuration: '1s' } },
  },
  rateLimiter: { instances: { paced: { limitForPeriod: 1, limitRefreshPeriod: '1s', timeoutDuration: '5s' } } },
};

describe('tracing: resilience events on the active span', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager();

  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
  });

  afterAll(() => {
    trace.disable();
    context.disable();
    propagation.disable();
  });

  beforeEach(() => exporter.reset());

  async function boot(options: ResilienceModuleOptions = OPTIONS) {
    const clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock, random: () => 1 - 1e-9, metrics: false, ...options })],
      providers: [{ provide: VirtualClock, useValue: clock }, Inventory],
    }).compile();
    moduleRef.useLogger(false);
    return { moduleRef: await moduleRef.init(), clock };
  }

  /** Runs `call` inside a span named `request`; the clock is driven from outside that span. */
  async function traced<T>(clock: VirtualClock, call: () => Promise<T>, ms = 10_000): Promise<T> {
    const tracer = trace.getTracer('test');
    const outcome = tracer.startActiveSpan('request', (span: Span) =>
      call().finally(() => {
        span.end();
      }),
    );
    // Read after the clock has run: a rejection is not left unhandled meanwhile.
    outcome.catch(() => undefined);
    await clock.advance(ms);
    return outcome;
  }

  const eventsOf = (name: string) => {
    const span = exporter.getFinishedSpans().find((s) => s.name === name);
    return (span?.events ?? []).map((e) => ({ name: e.name, attributes: e.attributes }));
  };

  it('shows a call that retried twice and fell back: every event, in order, with its attributes', async () => {
    const { moduleRef, clock } = await boot();
    const inventory = moduleRef.get(Inventory);
    await expect(traced(clock, () => inventory.stock())).resolves.toBe(-1);
    expect(inventory.calls).toBe(3);
    const retry = { 'resilience.policy': 'retry', 'resilience.instance': 'inventory' };
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.retry',
        attributes: {
          ...retry,
          'resilience.attempt.number': 1,
          'resilience.retry.wait_ms': 100,
          'error.type': 'Unavailable',
        },
      },
      { name: 'resilience.attempt', attributes: { ...retry, 'resilience.attempt.number': 2 } },
      {
        name: 'resilience.retry',
        attributes: {
          ...retry,
          'resilience.attempt.number': 2,
          'resilience.retry.wait_ms': 100,
          'error.type': 'Unavailable',
        },
      },
      { name: 'resilience.attempt', attributes: { ...retry, 'resilience.attempt.number': 3 } },
      {
        name: 'resilience.retry.stopped',
        attributes: {
          ...retry,
          'resilience.attempt.number': 3,
          'resilience.retry.stop_reason': 'max-attempts',
          'error.type': 'Unavailable',
        },
      },
      {
        name: 'resilience.fallback',
        attributes: {
          'resilience.policy': 'fallback',
          'resilience.instance': 'Inventory.stock',
          'resilience.fallback.handler': 'Unavailable',
          'error.type': 'Unavailable',
        },
      },
    ]);
    await moduleRef.close();
  });

  it('shows a hedged call: the hedge started and the attempt that won', async () => {
    const { moduleRef, clock } = await boot();
    await expect(traced(clock, () => moduleRef.get(Inventory).product())).resolves.toBe(2);
    const hedge = { 'resilience.policy': 'hedge', 'resilience.instance': 'catalog' };
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.hedge',
        attributes: { ...hedge, 'resilience.hedge.kind': 'started', 'resilience.attempt.number': 2 },
      },
      {
        name: 'resilience.hedge',
        attributes: {
          ...hedge,
          'resilience.hedge.kind': 'won',
          'resilience.attempt.number': 2,
          'resilience.hedge.cancelled': 1,
        },
      },
    ]);
    await moduleRef.close();
  });

  /** The events of a hedge `name` that started a second attempt at 100 ms and won with it, of `key` if given. */
  const hedgedAndWon = (name: string, key?: string) => {
    const hedge = {
      'resilience.policy': 'hedge',
      'resilience.instance': name,
      ...(key === undefined ? {} : { 'resilience.instance.key': key }),
    };
    return [
      {
        name: 'resilience.hedge',
        attributes: { ...hedge, 'resilience.hedge.kind': 'started', 'resilience.attempt.number': 2 },
      },
      {
        name: 'resilience.hedge',
        attributes: {
          ...hedge,
          'resilience.hedge.kind': 'won',
          'resilience.attempt.number': 2,
          'resilience.hedge.cancelled': 1,
        },
      },
    ];
  };

  /** A call whose first attempt answers after 1 s and every later one after 20 ms. */
  const firstSlow = (clock: VirtualClock) => {
    let attempts = 0;
    return () =>
      new Promise<number>((resolve) => {
        const attempt = ++attempts;
        clock.setTimeout(() => resolve(attempt), attempt === 1 ? 1000 : 20);
      });
  };

  it('shows the hedge of one region with the region as resilience.instance.key', async () => {
    const { moduleRef, clock } = await boot();
    await expect(traced(clock, () => moduleRef.get(Inventory).productIn('eu'))).resolves.toBe(2);
    expect(eventsOf('request')).toEqual(hedgedAndWon('catalog', 'eu'));
    await moduleRef.close();
  });

  it('shows the hedges of a hedge made after the application started', async () => {
    const { moduleRef, clock } = await boot({
      ...OPTIONS,
      hedging: { ...OPTIONS.hedging, configs: { default: { delay: '100ms' } } },
    });
    const late = moduleRef.get(ResilienceRegistry).hedge('late');
    await expect(traced(clock, () => late.execute(firstSlow(clock)))).resolves.toBe(2);
    expect(eventsOf('request')).toEqual(hedgedAndWon('late'));
    await moduleRef.close();
  });

  it('stops listening to the hedge of an evicted key: it records nothing, and the key made again is recorded once', async () => {
    const { moduleRef, clock } = await boot({ ...OPTIONS, hedging: { ...OPTIONS.hedging, keys: { max: 1 } } });
    const registry = moduleRef.get(ResilienceRegistry);
    const eu = registry.hedge('catalog', { key: 'eu' });
    await traced(clock, () => eu.execute(firstSlow(clock)));
    expect(eventsOf('request')).toEqual(hedgedAndWon('catalog', 'eu'));
    registry.hedge('catalog', { key: 'us' });
    expect(eu.observed).toBe(false);
    exporter.reset();
    await expect(traced(clock, () => eu.execute(firstSlow(clock)))).resolves.toBe(2);
    expect(eventsOf('request')).toEqual([]);
    const euAgain = registry.hedge('catalog', { key: 'eu' });
    expect(euAgain).not.toBe(eu);
    exporter.reset();
    await traced(clock, () => euAgain.execute(firstSlow(clock)));
    expect(eventsOf('request')).toEqual(hedgedAndWon('catalog', 'eu'));
    await moduleRef.close();
  });

  it('puts a timeout on the span of its own call, not of the call that armed the shared timer', async () => {
    const { moduleRef, clock } = await boot();
    const inventory = moduleRef.get(Inventory);
    const tracer = trace.getTracer('test');
    const run = (name: string) =>
      tracer.startActiveSpan(name, (span: Span) =>
        inventory
          .slow()
          .catch((error: unknown) => error)
          .finally(() => span.end()),
      );
    const first = run('first');
    await clock.advance(10);
    const second = run('second');
    await clock.advance(1000);
    expect(await Promise.all([first, second])).toEqual([expect.any(Error), expect.any(Error)]);
    const timeout = {
      name: 'resilience.timeout',
      attributes: {
        'resilience.policy': 'time_limiter',
        'resilience.instance': 'slow',
        'error.type': 'TimeoutExceededError',
      },
    };
    expect(eventsOf('first')).toEqual([timeout]);
    expect(eventsOf('second')).toEqual([timeout]);
    await moduleRef.close();
  });

  it('shows a breaker refusal with the state, and a rate-limiter wait with its length', async () => {
    const { moduleRef, clock } = await boot();
    const inventory = moduleRef.get(Inventory);
    moduleRef.get(ResilienceRegistry).circuitBreaker('open').transitionToForcedOpenState();
    await expect(traced(clock, () => inventory.guarded())).rejects.toMatchObject({ name: 'CallNotPermittedError' });
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.circuit_breaker.not_permitted',
        attributes: {
          'resilience.policy': 'circuit_breaker',
          'resilience.instance': 'open',
          'resilience.circuit_breaker.state': 'FORCED_OPEN',
        },
      },
    ]);
    exporter.reset();
    await inventory.paced();
    await traced(clock, () => inventory.paced(), 2000);
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.rate_limiter.waited',
        attributes: {
          'resilience.policy': 'rate_limiter',
          'resilience.instance': 'paced',
          'resilience.rate_limiter.wait_ms': 1000,
        },
      },
    ]);
    await moduleRef.close();
  });

  it('shows the refusal of the breaker of one host with the host as resilience.instance.key', async () => {
    const { moduleRef, clock } = await boot();
    const inventory = moduleRef.get(Inventory);
    await traced(clock, () => inventory.guardedPerHost('eu.example'));
    moduleRef.get(ResilienceRegistry).circuitBreaker('open', { key: 'eu.example' }).transitionToForcedOpenState();
    exporter.reset();
    await expect(traced(clock, () => inventory.guardedPerHost('eu.example'))).rejects.toMatchObject({
      name: 'CallNotPermittedError',
    });
    await traced(clock, () => inventory.guardedPerHost('us.example'));
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.circuit_breaker.not_permitted',
        attributes: {
          'resilience.policy': 'circuit_breaker',
          'resilience.instance': 'open',
          'resilience.instance.key': 'eu.example',
          'resilience.circuit_breaker.state': 'FORCED_OPEN',
        },
      },
    ]);
    await moduleRef.close();
  });

  it('puts a bulkhead wait on the span of the call that waited, not of the call that gave the permit back', async () => {
    const { moduleRef, clock } = await boot();
    const inventory = moduleRef.get(Inventory);
    const tracer = trace.getTracer('test');
    const first = tracer.startActiveSpan('first', (span: Span) => inventory.oneAtATime().finally(() => span.end()));
    const second = tracer.startActiveSpan('second', (span: Span) => inventory.oneAtATime().finally(() => span.end()));
    await clock.advance(300);
    await Promise.all([first, second]);
    expect(eventsOf('first')).toEqual([]);
    expect(eventsOf('second')).toEqual([
      {
        name: 'resilience.bulkhead.waited',
        attributes: {
          'resilience.policy': 'bulkhead',
          'resilience.instance': 'single',
          'resilience.bulkhead.wait_ms': 100,
        },
      },
    ]);
    await moduleRef.close();
  });

  it('shows a bulkhead refusal with its reason, and an idempotent replay', async () => {
    const { moduleRef, clock } = await boot();
    const inventory = moduleRef.get(Inventory);
    await expect(traced(clock, () => inventory.walledOff())).rejects.toMatchObject({ name: 'BulkheadFullError' });
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.bulkhead.rejected',
        attributes: {
          'resilience.policy': 'bulkhead',
          'resilience.instance': 'closed',
          'resilience.bulkhead.reason': 'queue-full',
          'error.type': 'BulkheadFullError',
        },
      },
    ]);
    exporter.reset();
    await inventory.reserve('r-1');
    await expect(traced(clock, () => inventory.reserve('r-1'))).resolves.toBe('reserved r-1');
    expect(eventsOf('request')).toEqual([
      {
        name: 'resilience.idempotency.replayed',
        attributes: { 'resilience.policy': 'idempotency', 'resilience.instance': 'Inventory.reserve' },
      },
    ]);
    await moduleRef.close();
  });

  it('with spanPerAttempt, opens a child span for each attempt, numbered, failed ones marked', async () => {
    const { moduleRef, clock } = await boot({ ...OPTIONS, tracing: { spanPerAttempt: true } });
    await expect(traced(clock, () => moduleRef.get(Inventory).stock())).resolves.toBe(-1);
    const spans = exporter.getFinishedSpans();
    const parent = spans.find((s) => s.name === 'request')!;
    const attempts = spans.filter((s) => s.name === 'Inventory.stock attempt');
    expect(attempts.map((s) => s.attributes['resilience.attempt.number'])).toEqual([1, 2, 3]);
    expect(attempts.every((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId)).toBe(true);
    expect(attempts.every((s) => s.status.code === SpanStatusCode.ERROR)).toBe(true);
    expect(attempts.map((s) => s.events.map((e) => e.name))).toEqual([['exception'], ['exception'], ['exception']]);
    await moduleRef.close();
  });

  describe('what an attempt span records of an error', () => {
    const exceptionsOf = (name: string) =>
      exporter
        .getFinishedSpans()
        .filter((s) => s.name === name)
        .map((s) => s.events.filter((e) => e.name === 'exception').map((e) => e.attributes));

    it('by default, its type, code and status, never its message or stack', async () => {
      const { moduleRef, clock } = await boot({ ...OPTIONS, tracing: { spanPerAttempt: true } });
      await expect(traced(clock, () => moduleRef.get(Inventory).charge())).rejects.toThrow(DECLINED_TEXT);
      const exception = {
        'exception.type': 'CardDeclined',
        'resilience.error.code': 'card_declined',
        'resilience.error.status': 402,
      };
      expect(exceptionsOf('Inventory.charge attempt')).toEqual([[exception]]);
      const recorded = JSON.stringify(
        exporter.getFinishedSpans().map((s) => ({ attributes: s.attributes, events: s.events, status: s.status })),
      );
      expect(recorded).not.toMatch(/4111|tok_live|declined for/);
      await moduleRef.close();
    });

    it('with recordExceptionMessages: true, its message and stack as well', async () => {
      const { moduleRef, clock } = await boot({
        ...OPTIONS,
        tracing: { spanPerAttempt: true, recordExceptionMessages: true },
      });
      await expect(traced(clock, () => moduleRef.get(Inventory).charge())).rejects.toThrow(DECLINED_TEXT);
      expect(exceptionsOf('Inventory.charge attempt')).toEqual([
        [
          {
            'exception.type': 'CardDeclined',
            'exception.message': DECLINED_TEXT,
            'exception.stacktrace': expect.stringContaining(DECLINED_TEXT),
            'resilience.error.code': 'card_declined',
            'resilience.error.status': 402,
          },
        ],
      ]);
      await moduleRef.close();
    });

    it('refuses a recordExceptionMessages that is not a boolean, naming it', async () => {
      await expect(boot({ ...OPTIONS, tracing: { recordExceptionMessages: 'yes' as never } })).rejects.toThrow(
        /tracing options.*'recordExceptionMessages'/,
      );
    });
  });

  describe('injected faults', () => {
    const injected = { 'resilience.fault.injected': true };

    it('marks the events and the exception an injected error produces, and not those of a real one', async () => {
      const { moduleRef, clock } = await boot({
        ...OPTIONS,
        tracing: { spanPerAttempt: true },
        faultInjection: { enabled: true, instances: { inventory: { error: { rate: 1, error: 'ECONNREFUSED' } } } },
      });
      await expect(traced(clock, () => moduleRef.get(Inventory).stock())).rejects.toMatchObject({
        code: 'ECONNREFUSED',
      });
      expect(moduleRef.get(Inventory).calls).toBe(0);
      const request = eventsOf('request');
      expect(request.map((e) => e.name)).toEqual([
        'resilience.retry',
        'resilience.attempt',
        'resilience.retry',
        'resilience.attempt',
        'resilience.retry.stopped',
      ]);
      const failures = request.filter((e) => e.name !== 'resilience.attempt');
      expect(failures.map((e) => e.attributes)).toEqual(
        failures.map(() => expect.objectContaining({ 'error.type': 'Error', ...injected })),
      );
      const attempts = exporter.getFinishedSpans().filter((s) => s.name === 'Inventory.stock attempt');
      expect(attempts.map((s) => s.events.map((e) => ({ name: e.name, attributes: e.attributes })))).toEqual(
        [1, 2, 3].map(() => [
          {
            name: 'resilience.fault',
            attributes: {
              'resilience.policy': 'fault_injection',
              'resilience.instance': 'inventory',
              'resilience.fault.kind': 'error',
              ...injected,
            },
          },
          {
            name: 'exception',
            attributes: { 'exception.type': 'Error', 'resilience.error.code': 'ECONNREFUSED', ...injected },
          },
        ]),
      );
      await moduleRef.close();
    });

    it('shows an injected latency on the span of the call it slowed, before the timeout it caused', async () => {
      const { moduleRef, clock } = await boot({
        ...OPTIONS,
        faultInjection: { enabled: true, instances: { slow: { latency: { rate: 1, duration: '5s' } } } },
      });
      await expect(traced(clock, () => moduleRef.get(Inventory).slow())).rejects.toMatchObject({
        name: 'TimeoutExceededError',
      });
      expect(eventsOf('request')).toEqual([
        {
          name: 'resilience.fault',
          attributes: {
            'resilience.policy': 'fault_injection',
            'resilience.instance': 'slow',
            'resilience.fault.kind': 'latency',
            'resilience.fault.duration_ms': 5000,
            ...injected,
          },
        },
        {
          name: 'resilience.timeout',
          attributes: {
            'resilience.policy': 'time_limiter',
            'resilience.instance': 'slow',
            'error.type': 'TimeoutExceededError',
          },
        },
      ]);
      await moduleRef.close();
    });
  });

  it('DeadlinePropagator sends the time left beside traceparent on every propagated request', async () => {
    propagation.setGlobalPropagator(
      new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new DeadlinePropagator()] }),
    );
    const { moduleRef, clock } = await boot();
    // A request scope with a 1 s deadline, as the module's deadline middleware opens one.
    const request = new ResilienceContext(clock, clock.now() + 1000);
    const headers = await traced(clock, () =>
      contextStorage.run(request, () => moduleRef.get(Inventory).outgoingHeaders()),
    );
    // The attempt's 50 ms limit (within the request's 1 s), 20 ms of it spent.
    expect(headers['x-request-deadline-ms']).toBe('30');
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const outside: Record<string, string> = {};
    propagation.inject(context.active(), outside);
    expect(outside['x-request-deadline-ms']).toBeUndefined();
    expect(new DeadlinePropagator('x-deadline').fields()).toEqual(['x-deadline']);
    await moduleRef.close();
  });

  it('records nothing, and subscribes to nothing, with tracing: false', async () => {
    const { moduleRef, clock } = await boot({ ...OPTIONS, tracing: false });
    expect(moduleRef.get(ResilienceTracing).active).toBe(false);
    await traced(clock, () => moduleRef.get(Inventory).stock());
    expect(eventsOf('request')).toEqual([]);
    await moduleRef.close();
  });
});
