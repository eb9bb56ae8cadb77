import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import {
  Bulkhead,
  BulkheadFullError,
  CallNotPermittedError,
  CircuitBreaker,
  fromSpringConfig,
  RateLimiter,
  ResilienceRegistry,
  Retry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import {
  IGNORED_LEGACY_PROPERTY,
  IGNORED_PROPERTY,
  IGNORED_UNKNOWN_KEY,
  LEGACY_PROPERTY,
  NAME_STRIPPED,
  SPRING_IGNORED_PROPERTY,
  THREAD_POOL_BULKHEAD_MAPPED,
  TIMEOUT_NOT_RECORDED,
  UNKNOWN_KEY,
} from '../../lib/config/config.messages';
import {
  IGNORED_INSTANCE_PROPERTIES,
  LEGACY_PROPERTIES,
  SPRING_IGNORED_PROPERTIES,
} from '../../lib/config/resilience4j-properties';
import { CIRCUIT_BREAKER_SCHEMA } from '../../lib/policies/circuit-breaker/circuit-breaker.config';
import { RATE_LIMITER_SCHEMA } from '../../lib/policies/rate-limiter/rate-limiter.config';
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

/** An error of the application, listed by its Java name in a file. */
class QuoteRejectedException extends Error {}

/** A promise and the function that settles it: a call held open until the test lets it go. */
function gate(): { held: Promise<void>; open: () => void } {
  let open!: () => void;
  const held = new Promise<void>((resolve) => (open = resolve));
  return { held, open };
}

/** What each call of `calls` came to: its value, or its error's class name. */
const outcomes = async (calls: Promise<unknown>[]): Promise<string[]> =>
  (await Promise.allSettled(calls)).map((s) =>
    s.status === 'fulfilled' ? String(s.value) : (s.reason as Error).constructor.name,
  );

const CB_KEYS = [...Object.keys(CIRCUIT_BREAKER_SCHEMA.fields), 'baseConfig'];
const RL_KEYS = [...Object.keys(RATE_LIMITER_SCHEMA.fields), 'baseConfig'];

describe('lenient-keys.yml: a key Spring ignores in every section', () => {
  @Injectable()
  class Billing {
    attempts: number[] = [];
    constructor(private readonly clock: VirtualClock) {}

    @Retry('payments')
    async charge(): Promise<never> {
      this.attempts.push(this.clock.now());
      throw httpError(503);
    }

    @Bulkhead('payments')
    async hold(held: Promise<void>): Promise<string> {
      await held;
      return 'held';
    }

    @Bulkhead('invoices', { type: 'THREADPOOL' })
    async render(held: Promise<void>): Promise<string> {
      await held;
      return 'pdf';
    }

    @RateLimiter('payments')
    async quote(): Promise<string> {
      return 'quote';
    }
  }

  let booted: BootedSpringApp<Billing>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('lenient-keys.yml'), Billing)));
  afterAll(() => booted.app.close());

  it('starts, with one warning per ignored key naming where it sits and what happens instead', () => {
    expect([...booted.warnings].sort()).toEqual(
      [
        IGNORED_UNKNOWN_KEY("circuitBreaker instance 'payments'", 'permitted-calls-in-half-open-state', CB_KEYS),
        IGNORED_LEGACY_PROPERTY(
          "retry instance 'payments'",
          'maxRetryAttempts',
          LEGACY_PROPERTIES.retry.maxRetryAttempts,
        ),
        SPRING_IGNORED_PROPERTY("bulkhead instance 'payments'", 'type', SPRING_IGNORED_PROPERTIES.bulkhead.type),
        SPRING_IGNORED_PROPERTY(
          "bulkhead instance 'payments'",
          'register-health-indicator',
          SPRING_IGNORED_PROPERTIES.bulkhead.registerHealthIndicator,
        ),
        SPRING_IGNORED_PROPERTY(
          "threadPoolBulkhead instance 'invoices'",
          'tags',
          SPRING_IGNORED_PROPERTIES.threadPoolBulkhead.tags,
        ),
        SPRING_IGNORED_PROPERTY(
          "threadPoolBulkhead instance 'invoices'",
          'register-health-indicator',
          SPRING_IGNORED_PROPERTIES.threadPoolBulkhead.registerHealthIndicator,
        ),
        SPRING_IGNORED_PROPERTY(
          "timeLimiter instance 'payments'",
          'register-health-indicator',
          SPRING_IGNORED_PROPERTIES.timeLimiter.registerHealthIndicator,
        ),
        IGNORED_UNKNOWN_KEY("rateLimiter instance 'payments'", 'limit-for-peroid', RL_KEYS),
        THREAD_POOL_BULKHEAD_MAPPED(['invoices']),
      ].sort(),
    );
    expect(booted.warnings.find((w) => w.includes('permitted-calls-in-half-open-state'))).toContain(
      "did you mean 'permitted-number-of-calls-in-half-open-state'?",
    );
    expect(booted.warnings.find((w) => w.includes('limit-for-peroid'))).toContain("did you mean 'limit-for-period'?");
  });

  it('leaves every ignored key without effect: the typo keeps 10 half-open trials, the 0.x key 2 attempts', () => {
    expect(booted.registry.circuitBreaker('payments').config).toMatchObject({
      slidingWindowSize: 4,
      permittedNumberOfCallsInHalfOpenState: 10,
    });
    expect(booted.registry.rateLimiter('payments').config.limitForPeriod).toBe(3);
  });

  it('retries twice in all, exactly 200 ms apart (wait-duration without jitter, as Resilience4j)', async () => {
    await drive(booted.clock, rejectionOf(booted.service.charge()));
    expect(booted.service.attempts.map((t) => t - booted.service.attempts[0])).toEqual([0, 200]);
  });

  it('limits @Bulkhead(payments) to 2 calls and the thread-pool invoices to 1 running and 1 queued', async () => {
    const a = gate();
    const holds = [booted.service.hold(a.held), booted.service.hold(a.held), booted.service.hold(a.held)];
    expect(await rejectionOf(holds[2])).toBeInstanceOf(BulkheadFullError);
    a.open();
    expect(await Promise.all(holds.slice(0, 2))).toEqual(['held', 'held']);
    const b = gate();
    const renders = [booted.service.render(b.held), booted.service.render(b.held), booted.service.render(b.held)];
    expect(await rejectionOf(renders[2])).toBeInstanceOf(BulkheadFullError);
    expect(booted.registry.threadPoolBulkhead('invoices').metrics).toMatchObject({
      maxAllowedConcurrentCalls: 1,
      queueDepth: 1,
    });
    b.open();
    expect(await Promise.all(renders.slice(0, 2))).toEqual(['pdf', 'pdf']);
  });

  it('lets 3 quotes a period through the rate limiter', async () => {
    expect(await outcomes(Array.from({ length: 4 }, () => booted.service.quote()))).toEqual([
      'quote',
      'quote',
      'quote',
      'RateLimitedError',
    ]);
  });

  it("fails at fromSpringConfig with unknownKeys: 'error', naming the key and suggesting the property", () => {
    expect(() => fromSpringConfig(springFixture('lenient-keys.yml'), { unknownKeys: 'error' })).toThrow(
      LEGACY_PROPERTY("retry instance 'payments'", 'maxRetryAttempts', LEGACY_PROPERTIES.retry.maxRetryAttempts),
    );
    expect(() =>
      fromSpringConfig('resilience4j.circuitbreaker.instances.payments.permitted-calls-in-half-open-state: 2', {
        unknownKeys: 'error',
      }),
    ).toThrow(UNKNOWN_KEY("circuitBreaker instance 'payments'", 'permitted-calls-in-half-open-state', CB_KEYS));
    expect(() =>
      fromSpringConfig('resilience4j.retry.instances.a.max-retry-attempts: 5', { unknownKeys: 'error' }),
    ).toThrow(LEGACY_PROPERTY("retry instance 'a'", 'max-retry-attempts', LEGACY_PROPERTIES.retry.maxRetryAttempts));
  });
});

describe('same-name-bulkheads.yml: one name under bulkhead and thread-pool-bulkhead', () => {
  @Injectable()
  class Catalog {
    @Bulkhead('inventory')
    async stock(held: Promise<void>): Promise<string> {
      await held;
      return 'stock';
    }

    @Bulkhead('inventory', { type: 'THREADPOOL' })
    async report(held: Promise<void>): Promise<string> {
      await held;
      return 'report';
    }

    @Bulkhead('reviews')
    async reviews(held: Promise<void>): Promise<string> {
      await held;
      return 'reviews';
    }

    @Bulkhead('reviews', { type: 'THREADPOOL' })
    async digest(held: Promise<void>): Promise<string> {
      await held;
      return 'digest';
    }

    @Bulkhead('pricing')
    async price(held: Promise<void>): Promise<string> {
      await held;
      return 'price';
    }
  }

  let booted: BootedSpringApp<Catalog>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('same-name-bulkheads.yml'), Catalog)));
  afterAll(() => booted.app.close());

  /** Starts `count` calls of `method` held on one gate; returns what the refused ones came to, then lets the rest finish. */
  async function simultaneous(method: (held: Promise<void>) => Promise<string>, count: number): Promise<string[]> {
    const g = gate();
    const settled = outcomes(Array.from({ length: count }, () => method.call(booted.service, g.held)));
    await new Promise((resolve) => setImmediate(resolve));
    g.open();
    return settled;
  }

  it('boots both, with the thread-pool warnings only', () => {
    expect(booted.warnings).toEqual([
      IGNORED_PROPERTY(
        "threadPoolBulkhead config 'default'",
        'coreThreadPoolSize',
        IGNORED_INSTANCE_PROPERTIES.threadPoolBulkhead.coreThreadPoolSize,
      ),
      IGNORED_PROPERTY(
        "threadPoolBulkhead instance 'pricing'",
        'coreThreadPoolSize',
        IGNORED_INSTANCE_PROPERTIES.threadPoolBulkhead.coreThreadPoolSize,
      ),
      THREAD_POOL_BULKHEAD_MAPPED(['inventory', 'pricing']),
    ]);
  });

  it('@Bulkhead(inventory) is the semaphore one: 3 of 5 simultaneous calls run, 2 are refused', async () => {
    expect(await simultaneous(booted.service.stock, 5)).toEqual([
      'stock',
      'stock',
      'stock',
      'BulkheadFullError',
      'BulkheadFullError',
    ]);
  });

  it("@Bulkhead(inventory, { type: 'THREADPOOL' }) is the thread-pool one: 2 run, 2 wait, the 5th is refused", async () => {
    expect(await simultaneous(booted.service.report, 5)).toEqual([
      'report',
      'report',
      'report',
      'report',
      'BulkheadFullError',
    ]);
  });

  it('an undeclared name gets the configs.default of its type: 6 of 8 (semaphore), 4 of 8 (thread pool)', async () => {
    expect((await simultaneous(booted.service.reviews, 8)).filter((o) => o === 'reviews')).toHaveLength(6);
    expect((await simultaneous(booted.service.digest, 8)).filter((o) => o === 'digest')).toHaveLength(4);
  });

  it("lets any number wait max-wait-duration, as Resilience4j's semaphore bulkhead: 1 runs, 4 wait 10 ms, then are refused", async () => {
    const g = gate();
    const settled = outcomes(Array.from({ length: 5 }, () => booted.service.price(g.held)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(booted.registry.bulkhead('pricing').metrics).toMatchObject({ availableConcurrentCalls: 0, queueDepth: 4 });
    await booted.clock.advance(10);
    g.open();
    expect(await settled).toEqual(['price', ...Array<string>(4).fill('BulkheadFullError')]);
  });
});

describe('commented-lists.yml: exception lists whose items are all commented out', () => {
  @Injectable()
  class Quotes {
    attempts: number[] = [];
    constructor(private readonly clock: VirtualClock) {}

    @Retry('quotes')
    async fetch(error: Error): Promise<never> {
      this.attempts.push(this.clock.now());
      throw error;
    }

    @CircuitBreaker('quotes')
    async check(error: Error): Promise<never> {
      throw error;
    }
  }

  let booted: BootedSpringApp<Quotes>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('commented-lists.yml'), Quotes)));
  afterAll(() => booted.app.close());
  beforeEach(() => (booted.service.attempts = []));

  it('boots without a warning, each list empty', () => {
    expect(booted.warnings).toEqual([]);
    expect(booted.registry.retry('quotes').config.retryExceptions).toEqual([]);
    expect(booted.registry.circuitBreaker('quotes').config.recordExceptions).toEqual([]);
  });

  it('retries every error (no list, as Resilience4j), each wait exactly 1000 ms', async () => {
    await drive(booted.clock, rejectionOf(booted.service.fetch(httpError(404))), 100);
    expect(booted.service.attempts.map((t) => t - booted.service.attempts[0])).toEqual([0, 1000, 2000]);
  });

  it('never retries the ignored application error', async () => {
    await drive(booted.clock, rejectionOf(booted.service.fetch(new QuoteRejectedException('no'))));
    expect(booted.service.attempts).toHaveLength(1);
  });

  it('records every error as a failure, a 404 too: two open the breaker', async () => {
    await rejectionOf(booted.service.check(httpError(404)));
    await rejectionOf(booted.service.check(httpError(404)));
    expect(booted.registry.circuitBreaker('quotes').metrics.numberOfFailedCalls).toBe(2);
    expect(await rejectionOf(booted.service.check(httpError(404)))).toBeInstanceOf(CallNotPermittedError);
  });
});

describe('feign-stripped.properties: unbracketed names stripped as Spring strips them', () => {
  @Injectable()
  class HttpBinClient {
    attempts: number[] = [];
    constructor(private readonly clock: VirtualClock) {}

    @CircuitBreaker('HttpBinClientstatusint')
    async status(code: number): Promise<never> {
      throw httpError(code);
    }

    @Retry('backenda')
    async get(): Promise<never> {
      this.attempts.push(this.clock.now());
      throw httpError(502);
    }
  }

  let booted: BootedSpringApp<HttpBinClient>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('feign-stripped.properties'), HttpBinClient)));
  afterAll(() => booted.app.close());

  it('warns once per stripped name, saying how to keep it', () => {
    expect([...booted.warnings].sort()).toEqual(
      [
        NAME_STRIPPED('circuitBreaker.instances', 'HttpBinClient#status(int)', 'HttpBinClientstatusint'),
        NAME_STRIPPED('timeLimiter.instances', 'HttpBinClient#status(int)', 'HttpBinClientstatusint'),
        NAME_STRIPPED('retry.instances', 'backend_a', 'backenda'),
      ].sort(),
    );
  });

  it('binds the stripped names and keeps the bracketed one', () => {
    const declared = [...booted.registry.options.sections.circuitBreaker.instances.keys()];
    expect(declared.sort()).toEqual(['HttpBinClient#delay(int)', 'HttpBinClientstatusint']);
    expect(booted.registry.circuitBreaker('HttpBinClient#delay(int)').config.slidingWindowSize).toBe(3);
    expect(booted.registry.timeLimiter('HttpBinClientstatusint').config.timeoutDuration).toBe(500);
  });

  it('opens the stripped-name breaker after its window of 2', async () => {
    await rejectionOf(booted.service.status(500));
    await rejectionOf(booted.service.status(500));
    expect(booted.registry.circuitBreaker('HttpBinClientstatusint').state).toBe('OPEN');
  });

  it('runs the backenda retry 4 times, 250 ms apart', async () => {
    await drive(booted.clock, rejectionOf(booted.service.get()));
    expect(booted.service.attempts.map((t) => t - booted.service.attempts[0])).toEqual([0, 250, 500, 750]);
  });
});

describe('feign-client.yml: a Spring Cloud OpenFeign client', () => {
  @Injectable()
  class InventoryClient {
    constructor(private readonly clock: VirtualClock) {}

    @CircuitBreaker('InventoryClientgetStockString')
    @Timeout('InventoryClientgetStockString')
    async getStock(failure: () => Promise<never>): Promise<never> {
      return failure();
    }

    /** A call that answers after `ms` of virtual time. */
    slow(ms: number): Promise<never> {
      return new Promise((_, reject) => this.clock.setTimeout(() => reject(new Error('late')), ms));
    }
  }

  let booted: BootedSpringApp<InventoryClient>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('feign-client.yml'), InventoryClient)));
  afterAll(() => booted.app.close());

  it('boots without a warning: record-exceptions lists TimeoutException, so the time limiter inside counts', () => {
    expect(booted.warnings).toEqual([]);
  });

  it('records only the listed errors: HTTP 503, a refused connection and a timeout fail; an HTTP 500 succeeds', async () => {
    const port = await freePort();
    const client = booted.service;
    await rejectionOf(client.getStock(() => Promise.reject(httpError(500))));
    await rejectionOf(client.getStock(() => Promise.reject(httpError(503))));
    await rejectionOf(client.getStock(() => refusedConnection(port)));
    expect(booted.registry.circuitBreaker('InventoryClientgetStockString').metrics).toMatchObject({
      numberOfSuccessfulCalls: 1,
      numberOfFailedCalls: 2,
    });
    const timedOut = await drive(booted.clock, rejectionOf(client.getStock(() => client.slow(1000))));
    expect(timedOut).toBeInstanceOf(TimeoutExceededError);
    expect(booted.registry.circuitBreaker('InventoryClientgetStockString').metrics).toMatchObject({
      numberOfFailedCalls: 3,
      failureRate: 75,
    });
    expect(booted.registry.circuitBreaker('InventoryClientgetStockString').state).toBe('OPEN');
  });
});

describe('cloud-gateway.yml: a Spring Cloud Gateway route breaker and its time limiter', () => {
  @Injectable()
  class OrdersRoute {
    constructor(private readonly clock: VirtualClock) {}

    @CircuitBreaker('ordersCircuitBreaker')
    @Timeout('ordersCircuitBreaker')
    async forward(status: number, ms = 0): Promise<string> {
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, ms));
      if (status >= 400) throw httpError(status);
      return 'routed';
    }
  }

  let booted: BootedSpringApp<OrdersRoute>;
  beforeAll(async () => (booted = await bootSpringApp(springFixture('cloud-gateway.yml'), OrdersRoute)));
  afterAll(() => booted.app.close());

  it('boots without a warning: the gateway settings are not Resilience4j properties', () => {
    expect(booted.warnings).toEqual([]);
    expect(booted.registry.timeLimiter('ordersCircuitBreaker').config.timeoutDuration).toBe(1500);
  });

  it('times a route out at 1500 ms and counts every error as a failure (a 404 too, as Resilience4j): 3 of 5 open it', async () => {
    const route = booted.service;
    expect(await drive(booted.clock, route.forward(200, 100))).toBe('routed');
    expect(await drive(booted.clock, rejectionOf(route.forward(200, 2000)))).toBeInstanceOf(TimeoutExceededError);
    expect(await drive(booted.clock, route.forward(200, 100))).toBe('routed');
    await drive(booted.clock, rejectionOf(route.forward(404)));
    await drive(booted.clock, rejectionOf(route.forward(404)));
    expect(booted.registry.circuitBreaker('ordersCircuitBreaker').metrics).toMatchObject({
      numberOfBufferedCalls: 5,
      numberOfFailedCalls: 3,
    });
    expect(booted.registry.circuitBreaker('ordersCircuitBreaker').state).toBe('OPEN');
  });
});

describe('a time limiter inside a breaker whose record-exceptions omits timeouts', () => {
  const FILE = [
    'resilience4j.circuitbreaker.instances.ledger:',
    '  sliding-window-size: 5',
    '  minimum-number-of-calls: 5',
    '  record-exceptions:',
    '    - java.io.IOException',
    'resilience4j.timelimiter.instances.ledger.timeout-duration: 100ms',
  ].join('\n');

  @Injectable()
  class Ledger {
    constructor(private readonly clock: VirtualClock) {}

    @CircuitBreaker('ledger')
    @Timeout('ledger')
    async post(): Promise<string> {
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 1000));
      return 'posted';
    }
  }

  let booted: BootedSpringApp<Ledger>;
  beforeAll(async () => (booted = await bootSpringApp(FILE, Ledger)));
  afterAll(() => booted.app.close());

  it('warns at startup, naming the breaker, the time limiter and the method', () => {
    expect(booted.warnings).toEqual([TIMEOUT_NOT_RECORDED('ledger', 'ledger', 'Ledger.post')]);
  });

  it('counts the timeouts as successes, as Resilience4j does: 5 leave the breaker closed', async () => {
    for (let i = 0; i < 5; i++)
      expect(await drive(booted.clock, rejectionOf(booted.service.post()))).toBeInstanceOf(TimeoutExceededError);
    expect(booted.registry.circuitBreaker('ledger').metrics).toMatchObject({
      numberOfSuccessfulCalls: 5,
      numberOfFailedCalls: 0,
    });
    expect(booted.registry.circuitBreaker('ledger').state).toBe('CLOSED');
  });
});

describe('a circular baseConfig', () => {
  it('is refused, as Resilience4j refuses it at startup', () => {
    expect(() =>
      fromSpringConfig(
        'resilience4j.circuitbreaker:\n  configs:\n    default: { sliding-window-size: 4 }\n  instances:\n    default: { base-config: default }\n',
      ),
    ).toThrow(/circuitBreaker instance 'default': key 'baseConfig' names 'default', the instance's own name/);
  });
});

describe('every file in test/fixtures/spring', () => {
  const files = readdirSync(join(__dirname, '..', 'fixtures', 'spring')).filter((f) => /\.(ya?ml|properties)$/.test(f));

  it.each(files)('%s starts', (file) => {
    const registry = new ResilienceRegistry(fromSpringConfig(springFixture(file)), () => undefined);
    expect(registry.options.binding).toBe('spring');
  });
});
