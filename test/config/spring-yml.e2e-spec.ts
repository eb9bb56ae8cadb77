import { Injectable } from '@nestjs/common';
import {
  Bulkhead,
  BulkheadFullError,
  CallNotPermittedError,
  CircuitBreaker,
  DEFAULT_ORDER,
  RateLimitedError,
  RateLimiter,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import {
  ASPECT_ORDER_DIFFERS,
  IGNORED_PROPERTY,
  IGNORED_SECTION,
  THREAD_POOL_BULKHEAD_MAPPED,
  UNMATCHED_EXCEPTIONS,
} from '../../lib/config/config.messages';
import {
  IGNORED_INSTANCE_PROPERTIES,
  IGNORED_SECTION_PROPERTIES,
  IGNORED_SECTIONS,
} from '../../lib/config/resilience4j-properties';
import {
  BootedSpringApp,
  bootSpringApp,
  drive,
  httpError,
  refusedConnection,
  rejectionOf,
  springFixture,
} from '../support/spring-app';
import { freePort } from '../support/wait';

/** An error class of the application, listed by its Java name in the YAML. */
class BusinessException extends Error {}

describe('dotted-root.yml: Resilience4j sections as dotted root keys, with Java exception lists', () => {
  @Injectable()
  class OrderClients {
    attempts = 0;

    @CircuitBreaker('payments')
    async pay(port: number): Promise<never> {
      this.attempts++;
      return refusedConnection(port);
    }

    @CircuitBreaker('inventory')
    async check(error: Error): Promise<never> {
      throw error;
    }

    @Retry('inventory')
    async reserve(error: Error): Promise<never> {
      this.attempts++;
      throw error;
    }
  }

  let booted: BootedSpringApp<OrderClients>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('dotted-root.yml'), OrderClients)));
  afterAll(() => booted.app.close());
  beforeEach(() => (booted.service.attempts = 0));

  it('warns once, only for the one property with no effect here', () => {
    expect(booted.warnings).toEqual([
      IGNORED_PROPERTY(
        "circuitBreaker config 'default'",
        'eventConsumerBufferSize',
        IGNORED_INSTANCE_PROPERTIES.circuitBreaker.eventConsumerBufferSize,
      ),
    ]);
  });

  it('reads the values, the placeholder default included', () => {
    expect(booted.registry.circuitBreaker('payments').config).toMatchObject({
      slidingWindowSize: 10,
      minimumNumberOfCalls: 5,
      permittedNumberOfCallsInHalfOpenState: 3,
      automaticTransitionFromOpenToHalfOpenEnabled: true,
      waitDurationInOpenState: 10_000,
      registerHealthIndicator: true,
    });
    expect(booted.registry.timeLimiter('inventory').config).toEqual({
      timeoutDuration: 2000,
      cancelRunningFuture: false,
    });
  });

  it('record-exceptions [java.io.IOException] opens the breaker on real ECONNREFUSED errors', async () => {
    const port = await freePort();
    for (let i = 0; i < 5; i++) {
      expect(await rejectionOf(booted.service.pay(port))).toMatchObject({ cause: { code: 'ECONNREFUSED' } });
    }
    const breaker = booted.registry.circuitBreaker('payments');
    expect(breaker.state).toBe('OPEN');
    expect(breaker.metrics).toMatchObject({ numberOfFailedCalls: 5, failureRate: 100 });
    expect(await rejectionOf(booted.service.pay(port))).toBeInstanceOf(CallNotPermittedError);
    expect(booted.service.attempts).toBe(5);
  });

  it('ignore-exceptions names the application class; other errors count as successes, as in Resilience4j', async () => {
    for (let i = 0; i < 3; i++) await rejectionOf(booted.service.check(new BusinessException('no stock')));
    for (let i = 0; i < 2; i++) await rejectionOf(booted.service.check(new Error('a bug, not an outage')));
    for (let i = 0; i < 2; i++) await rejectionOf(booted.service.check(httpError(500)));
    expect(booted.registry.circuitBreaker('inventory').metrics).toMatchObject({
      numberOfBufferedCalls: 4,
      numberOfSuccessfulCalls: 2,
      numberOfFailedCalls: 2,
    });
    // The fifth recorded call reaches minimum-number-of-calls: 3 failures in 5 is 60%, over the 50% threshold.
    await rejectionOf(booted.service.check(httpError(500)));
    expect(booted.registry.circuitBreaker('inventory').state).toBe('OPEN');
  });

  it('retry-exceptions [HttpServerErrorException] retries an HTTP 500, which the default set does not; the business error is not retried', async () => {
    await drive(booted.clock, rejectionOf(booted.service.reserve(httpError(500))));
    expect(booted.service.attempts).toBe(3);
    booted.service.attempts = 0;
    await drive(booted.clock, rejectionOf(booted.service.reserve(new BusinessException('no stock'))));
    expect(booted.service.attempts).toBe(1);
  });
});

describe('nested.yml: one nested kebab-case block', () => {
  @Injectable()
  class Recommendations {
    attempts = 0;
    constructor(private readonly clock: VirtualClock) {}

    @CircuitBreaker('recommendations')
    @Retry('recommendations')
    @Timeout('recommendations')
    @Bulkhead('recommendations')
    async forUser(ms: number): Promise<string> {
      this.attempts++;
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, ms));
      return 'sku-3';
    }
  }

  let booted: BootedSpringApp<Recommendations>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('nested.yml'), Recommendations)));
  afterAll(() => booted.app.close());
  beforeEach(() => (booted.service.attempts = 0));

  it('boots without a warning and reads every value', () => {
    expect(booted.warnings).toEqual([]);
    expect(booted.registry.circuitBreaker('recommendations').config).toMatchObject({
      slidingWindowType: 'TIME_BASED',
      slidingWindowSize: 10,
      minimumNumberOfCalls: 4,
      slowCallDurationThreshold: 1000,
      waitDurationInOpenState: 30_000,
      permittedNumberOfCallsInHalfOpenState: 2,
      registerHealthIndicator: true,
    });
    expect(booted.registry.retry('recommendations').config).toMatchObject({
      maxAttempts: 2,
      waitDuration: 50,
      enableExponentialBackoff: true,
      exponentialBackoffMultiplier: 2,
    });
  });

  it('times a slow call out at 250 ms and retries it once', async () => {
    const error = await drive(booted.clock, rejectionOf(booted.service.forUser(1000)));
    expect(error).toBeInstanceOf(TimeoutExceededError);
    expect(booted.service.attempts).toBe(2);
  });

  it('lets two calls in at once and refuses the third at once', async () => {
    // The timed-out attempts above ignore their abort signal and hold their permits until they end.
    await booted.clock.advance(1000);
    expect(booted.registry.bulkhead('recommendations').metrics.availableConcurrentCalls).toBe(2);
    const calls = [booted.service.forUser(100), booted.service.forUser(100), booted.service.forUser(100)];
    const settled = await drive(booted.clock, Promise.allSettled(calls));
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).constructor.name))).toEqual([
      'sku-3',
      'sku-3',
      'BulkheadFullError',
    ]);
  });
});

describe("backends.yml: 'backends' and 'limiters', snake_case and upper-case keys, 'count-based'", () => {
  @Injectable()
  class Catalog {
    @CircuitBreaker('catalog')
    @Retry('catalog')
    async lookup(fail: boolean): Promise<string> {
      if (fail) throw httpError(503);
      return 'ok';
    }

    @Bulkhead('catalog')
    async hold(gate: Promise<void>): Promise<string> {
      await gate;
      return 'held';
    }
  }

  let booted: BootedSpringApp<Catalog>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('backends.yml'), Catalog)));
  afterAll(() => booted.app.close());

  it('reads every instance', () => {
    expect(booted.warnings).toEqual([]);
    expect(booted.registry.circuitBreaker('catalog').config).toMatchObject({
      slidingWindowType: 'COUNT_BASED',
      slidingWindowSize: 4,
      failureRateThreshold: 75,
      waitDurationInOpenState: 20_000,
    });
    expect(booted.registry.bulkhead('catalog').config).toMatchObject({ maxConcurrentCalls: 1, maxWaitDuration: 0 });
    expect(booted.registry.timeLimiter('catalog').config.timeoutDuration).toBe(1000);
  });

  it('opens at a 75% failure rate over four calls', async () => {
    for (const fail of [true, false, true, true]) await booted.service.lookup(fail).catch(() => undefined);
    expect(booted.registry.circuitBreaker('catalog').state).toBe('OPEN');
    expect(await rejectionOf(booted.service.lookup(false))).toBeInstanceOf(CallNotPermittedError);
  });

  it('holds one call at a time', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const first = booted.service.hold(gate);
    expect(await rejectionOf(booted.service.hold(gate))).toBeInstanceOf(BulkheadFullError);
    open();
    expect(await first).toBe('held');
  });
});

describe('aspect-orders.yml: aspect orders, tags, Micrometer and scheduler settings', () => {
  @Injectable()
  class Checkout {
    attempts = 0;

    @CircuitBreaker('checkout')
    @Retry('checkout')
    @Timeout('checkout')
    async pay(): Promise<never> {
      this.attempts++;
      throw httpError(503);
    }
  }

  let booted: BootedSpringApp<Checkout>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('aspect-orders.yml'), Checkout)));
  afterAll(() => booted.app.close());

  it('boots with one warning per key, each saying what happens instead, and one with the order that would nest the layers as Spring did', () => {
    const section = IGNORED_SECTION_PROPERTIES;
    expect([...booted.warnings].sort()).toEqual(
      [
        IGNORED_PROPERTY(
          'circuitBreaker',
          'circuit-breaker-aspect-order',
          section.circuitBreaker.circuitBreakerAspectOrder,
        ),
        IGNORED_PROPERTY('circuitBreaker', 'tags', section.circuitBreaker.tags),
        IGNORED_PROPERTY('circuitBreaker', 'metrics', section.circuitBreaker.metrics),
        IGNORED_PROPERTY('retry', 'retry-aspect-order', section.retry.retryAspectOrder),
        IGNORED_PROPERTY('timeLimiter', 'time-limiter-aspect-order', section.timeLimiter.timeLimiterAspectOrder),
        IGNORED_PROPERTY('bulkhead', 'bulkhead-aspect-order', section.bulkhead.bulkheadAspectOrder),
        IGNORED_SECTION('scheduled', IGNORED_SECTIONS.scheduled),
        IGNORED_SECTION('micrometer', IGNORED_SECTIONS.micrometer),
        IGNORED_SECTION('thread', IGNORED_SECTIONS.thread),
        ASPECT_ORDER_DIFFERS(
          ['idempotent', 'fallback', 'circuitBreaker', 'retry', 'timeLimiter', 'bulkhead', 'rateLimiter'],
          DEFAULT_ORDER,
        ),
      ].sort(),
    );
  });

  it('keeps the fixed composition order: retry stays outside the breaker although the aspect orders say otherwise', async () => {
    await drive(booted.clock, rejectionOf(booted.service.pay()));
    // Retry outermost: two attempts fill the two-call window and open the breaker, which refuses the third
    // (with the breaker outside, as these aspect orders would make it in Spring, all three attempts would run).
    expect(booted.service.attempts).toBe(2);
    expect(booted.registry.circuitBreaker('checkout').state).toBe('OPEN');
  });
});

describe('java-exceptions.yml: Spring, java.net, Feign and Resilience4j exception names', () => {
  @Injectable()
  class Shipping {
    attempts = 0;

    @CircuitBreaker('shipping')
    async quote(failure: () => Promise<never>): Promise<never> {
      return failure();
    }

    @Retry('shipping')
    async book(status: number): Promise<never> {
      this.attempts++;
      throw httpError(status);
    }
  }

  let booted: BootedSpringApp<Shipping>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('java-exceptions.yml'), Shipping)));
  afterAll(() => booted.app.close());
  beforeEach(() => (booted.service.attempts = 0));

  it('warns that the legacy breaker lists only names nothing here throws, and what that would do', () => {
    expect(booted.warnings).toEqual([
      UNMATCHED_EXCEPTIONS(
        "circuitBreaker instance 'legacy'",
        'record-exceptions',
        ['org.springframework.dao.DataAccessResourceFailureException', 'java.sql.SQLTransientConnectionException'],
        'every error would count as a success, so the breaker would never open',
      ),
    ]);
  });

  it('ignores 4xx (HttpClientErrorException), records 5xx and connection errors (HttpServerErrorException, ConnectException)', async () => {
    const port = await freePort();
    for (let i = 0; i < 3; i++) await rejectionOf(booted.service.quote(() => Promise.reject(httpError(404))));
    expect(booted.registry.circuitBreaker('shipping').metrics.numberOfBufferedCalls).toBe(0);
    await rejectionOf(booted.service.quote(() => refusedConnection(port)));
    await rejectionOf(booted.service.quote(() => refusedConnection(port)));
    await rejectionOf(booted.service.quote(() => Promise.reject(httpError(500))));
    await rejectionOf(booted.service.quote(() => Promise.reject(httpError(502))));
    expect(booted.registry.circuitBreaker('shipping').metrics).toMatchObject({
      numberOfFailedCalls: 4,
      failureRate: 100,
    });
    expect(booted.registry.circuitBreaker('shipping').state).toBe('OPEN');
  });

  it('retries feign.FeignException$InternalServerError (HTTP 500) and not an HTTP 501', async () => {
    await drive(booted.clock, rejectionOf(booted.service.book(500)));
    expect(booted.service.attempts).toBe(3);
    booted.service.attempts = 0;
    await drive(booted.clock, rejectionOf(booted.service.book(501)));
    expect(booted.service.attempts).toBe(1);
  });
});

describe('ratelimiter.yml: a rate limiter section and a thread-pool bulkhead', () => {
  @Injectable()
  class Reports {
    @Bulkhead('reports')
    async render(gate: Promise<void>): Promise<string> {
      await gate;
      return 'pdf';
    }

    @RateLimiter('search')
    async search(): Promise<string> {
      return 'hits';
    }
  }

  let booted: BootedSpringApp<Reports>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('ratelimiter.yml'), Reports)));
  afterAll(() => booted.app.close());

  it('boots, saying how the thread-pool bulkhead runs and which thread-pool keys have no effect', () => {
    expect(booted.warnings).toEqual(
      expect.arrayContaining([
        THREAD_POOL_BULKHEAD_MAPPED(['reports']),
        IGNORED_PROPERTY(
          "threadPoolBulkhead config 'default'",
          'core-thread-pool-size',
          IGNORED_INSTANCE_PROPERTIES.threadPoolBulkhead.coreThreadPoolSize,
        ),
        IGNORED_PROPERTY(
          "threadPoolBulkhead config 'default'",
          'keep-alive-duration',
          IGNORED_INSTANCE_PROPERTIES.threadPoolBulkhead.keepAliveDuration,
        ),
      ]),
    );
    expect(booted.warnings.filter((w) => w.includes("property 'thread-pool-bulkhead'"))).toEqual([]);
  });

  it("limits through @RateLimiter('search'): 5 calls a second from its limiters entry over the default config, the sixth refused", async () => {
    expect(booted.registry.rateLimiter('search').config).toMatchObject({
      limitForPeriod: 5,
      limitRefreshPeriod: 1000,
      timeoutDuration: 0,
      registerHealthIndicator: true,
    });
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, () => booted.service.search().catch((error: unknown) => error)),
    );
    expect(outcomes.slice(0, 5)).toEqual(['hits', 'hits', 'hits', 'hits', 'hits']);
    expect(outcomes[5]).toBeInstanceOf(RateLimitedError);
  });

  it('runs the thread-pool bulkhead through @Bulkhead(name): 2 threads and a queue of 2, so the fifth call is refused', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const calls = Array.from({ length: 5 }, () => booted.service.render(gate));
    const refused = await rejectionOf(calls[4]);
    expect(refused).toBeInstanceOf(BulkheadFullError);
    expect(booted.registry.bulkhead('reports').metrics).toMatchObject({
      maxAllowedConcurrentCalls: 2,
      availableConcurrentCalls: 0,
      queueDepth: 2,
    });
    open();
    expect(await Promise.all(calls.slice(0, 4))).toEqual(['pdf', 'pdf', 'pdf', 'pdf']);
  });
});

describe('application.properties: flat lines with indexed lists', () => {
  @Injectable()
  class Pricing {
    @CircuitBreaker('pricing')
    async price(port: number): Promise<never> {
      return refusedConnection(port);
    }
  }

  let booted: BootedSpringApp<Pricing>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('application.properties'), Pricing)));
  afterAll(() => booted.app.close());

  it('opens on connection errors through record-exceptions[0]=java.io.IOException', async () => {
    const listed = booted.registry.circuitBreaker('pricing').config.recordExceptions;
    expect(listed.map((e) => (typeof e === 'string' ? e : e.name))).toEqual([
      'java.io.IOException',
      'java.util.concurrent.TimeoutException',
    ]);
    const port = await freePort();
    for (let i = 0; i < 4; i++) await rejectionOf(booted.service.price(port));
    expect(booted.registry.circuitBreaker('pricing').state).toBe('OPEN');
  });
});
