import { Body, Controller, Get, Headers, INestApplication, Inject, Injectable, Logger, Post } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import {
  CircuitBreaker,
  currentSignal,
  DEFAULT_MAX_DEADLINE_BUDGET_MS,
  deadlineHeaders,
  remainingTime,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceRegistry,
  Timeout,
  VirtualClock,
} from '../../lib';
import { INVALID_DEADLINE_HEADER } from '../../lib/kernel/resilience.messages';
import { createPlatformApp, mediaType, Platform, PLATFORMS } from '../support/platforms';

@Injectable()
class InventoryClient {
  baseUrl = '';

  constructor(@Inject(VirtualClock) private readonly clock: VirtualClock) {}

  /** Spends 250 ms of (virtual) time, then calls the downstream service passing the time left. */
  async stock(): Promise<{ seenHeader: string; remainingInside: number; upstreamRemaining: number }> {
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 250));
    const upstreamRemaining = remainingTime();
    const response = await fetch(`${this.baseUrl}/stock`, { headers: deadlineHeaders() });
    return { ...((await response.json()) as { seenHeader: string; remainingInside: number }), upstreamRemaining };
  }
}

@Controller()
class FrontController {
  constructor(private readonly inventory: InventoryClient) {}

  @Get('order')
  order() {
    return this.inventory.stock();
  }

  @Get('budget')
  budget() {
    return { remaining: remainingTime() };
  }

  @Post('budget')
  async budgetAfterBody(@Body() body: { item: string }) {
    await Promise.resolve();
    return { item: body.item, remaining: remainingTime() };
  }

  @Get('forward')
  forward() {
    return { remaining: remainingTime(), aborted: currentSignal()?.aborted, forwarded: deadlineHeaders() };
  }
}

@Injectable()
class StockService {
  @Timeout(500)
  async level(): Promise<number> {
    return remainingTime();
  }
}

@Controller()
class InventoryController {
  constructor(private readonly stock: StockService) {}

  @Get('stock')
  async get(@Headers('x-request-deadline-ms') seenHeader: string) {
    return { seenHeader, remainingInside: await this.stock.level() };
  }
}

async function boot(
  platform: Platform,
  clock: VirtualClock,
  controller: new (...args: never[]) => unknown,
  providers: Array<new (...args: never[]) => unknown>,
  defaultBudget?: string,
) {
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock, deadline: defaultBudget ? { defaultBudget } : {} })],
    controllers: [controller],
    providers: [...providers, { provide: VirtualClock, useValue: clock }],
  }).compile();
  const app = createPlatformApp(moduleRef, platform);
  app.useGlobalFilters(new ResilienceExceptionFilter());
  await app.listen(0, '127.0.0.1');
  return app;
}

describe.each(PLATFORMS)('deadline propagation across two HTTP hops (%s)', (platform) => {
  const clock = new VirtualClock();
  let front: INestApplication;
  let inventory: INestApplication;

  beforeAll(async () => {
    inventory = await boot(platform, clock, InventoryController, [StockService]);
    front = await boot(platform, clock, FrontController, [InventoryClient], '2s');
    const { port } = inventory.getHttpServer().address() as AddressInfo;
    front.get(InventoryClient).baseUrl = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await front.close();
    await inventory.close();
  });

  it('the downstream sees the time left after the upstream spent some, and its own timeout caps it further', async () => {
    const inFlight = request(front.getHttpServer()).get('/order').set('x-request-deadline-ms', '1000');
    const response = inFlight.then((r) => r);
    for (let i = 0; i < 200 && clock.pendingTimers === 0; i++) await VirtualClock.settle();
    expect(clock.pendingTimers).toBeGreaterThan(0);
    await clock.advance(250);
    const { status, body } = await response;
    expect(status).toBe(200);
    expect(body).toEqual({ seenHeader: '750', remainingInside: 500, upstreamRemaining: 750 });
  });

  it('a request without the header gets the default budget', async () => {
    const { body } = await request(front.getHttpServer()).get('/budget').expect(200);
    expect(body).toEqual({ remaining: 2000 });
  });

  it.each([['soon'], ['-5'], ['12.5'], ['']])(
    'a malformed header %p is ignored with a warning, the default budget applies',
    async (value) => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const { body } = await request(front.getHttpServer())
        .get('/budget')
        .set('x-request-deadline-ms', value)
        .expect(200);
      expect(body).toEqual({ remaining: 2000 });
      warn.mockRestore();
    },
  );

  it('names the header and the bad value in the warning', () => {
    expect(INVALID_DEADLINE_HEADER('x-request-deadline-ms', 'soon')).toContain("'x-request-deadline-ms'");
    expect(INVALID_DEADLINE_HEADER('x-request-deadline-ms', 'soon')).toContain('"soon"');
  });

  it.each([['99999999999999999999'], ['999999999999999999999999']])(
    'a header of %s ms is clamped to the 24 h maximum and forwarded as whole digits',
    async (value) => {
      const { body } = await request(front.getHttpServer())
        .get('/forward')
        .set('x-request-deadline-ms', value)
        .expect(200);
      expect(DEFAULT_MAX_DEADLINE_BUDGET_MS).toBe(86_400_000);
      expect(body).toEqual({
        remaining: 86_400_000,
        aborted: false,
        forwarded: { 'x-request-deadline-ms': '86400000' },
      });
    },
  );

  it('a request arriving with no time left fails at once with 504', async () => {
    const response = await request(front.getHttpServer()).get('/budget').set('x-request-deadline-ms', '0').expect(504);
    expect(mediaType(response.headers['content-type'])).toBe('application/problem+json');
  });

  it('without a header or default budget the request has no deadline, and a time-limited call sees its own limit', async () => {
    const { body } = await request(inventory.getHttpServer()).get('/stock').expect(200);
    expect(body.remainingInside).toBe(500);
  });

  it('a request with a body keeps its deadline scope through body parsing into the handler', async () => {
    const { body } = await request(front.getHttpServer())
      .post('/budget')
      .set('x-request-deadline-ms', '1500')
      .send({ item: 'sku-1' })
      .expect(201);
    expect(body).toEqual({ item: 'sku-1', remaining: 1500 });
  });

  it('adds no global interceptor: routes without resilience work pay nothing for the module', () => {
    for (const app of [front, inventory]) {
      const config = app.get(ApplicationConfig);
      expect(config.getGlobalInterceptors()).toEqual([]);
      expect(config.getGlobalRequestInterceptors()).toEqual([]);
    }
  });
});

describe.each(PLATFORMS)('attemptContext: always (%s)', (platform) => {
  const clock = new VirtualClock();
  let inventory: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock, deadline: { attemptContext: 'always' } })],
      controllers: [InventoryController],
      providers: [StockService],
    }).compile();
    inventory = createPlatformApp(moduleRef, platform);
    await inventory.listen(0, '127.0.0.1');
  });

  afterAll(() => inventory.close());

  it('a time-limited call without a request deadline sees its own limit', async () => {
    const { body } = await request(inventory.getHttpServer()).get('/stock').expect(200);
    expect(body.remainingInside).toBe(500);
  });
});

describe.each(PLATFORMS)('without the deadline option (%s)', (platform) => {
  const clock = new VirtualClock();
  let app: INestApplication;
  let preHandlers: number;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock })],
      controllers: [FrontController],
      providers: [InventoryClient, { provide: VirtualClock, useValue: clock }],
    }).compile();
    app = createPlatformApp(moduleRef, platform);
    app.useGlobalFilters(new ResilienceExceptionFilter());
    preHandlers = 0;
    if (platform === 'fastify') {
      const fastify = app.getHttpAdapter().getInstance() as { addHook(name: string, ...rest: unknown[]): unknown };
      const addHook = fastify.addHook.bind(fastify);
      fastify.addHook = (name: string, ...rest: unknown[]) => {
        if (name === 'preHandler') preHandlers++;
        return addHook(name, ...rest);
      };
    }
    await app.listen(0, '127.0.0.1');
  });

  afterAll(() => app.close());

  it('installs no hook: Fastify keeps its hook-free path', () => {
    expect(preHandlers).toBe(0);
  });

  it('reads no deadline header: a request with time left gets no scope', async () => {
    const { body } = await request(app.getHttpServer())
      .get('/forward')
      .set('x-request-deadline-ms', '1500')
      .expect(200);
    expect(body).toEqual({ remaining: null, forwarded: {} });
  });

  it('a header saying no time is left is not answered 504: no one reads it', async () => {
    const { body } = await request(app.getHttpServer()).get('/budget').set('x-request-deadline-ms', '0').expect(200);
    expect(body).toEqual({ remaining: null });
  });
});

describe.each(PLATFORMS)('deadline: {} turns the inbound scope on (%s)', (platform) => {
  const clock = new VirtualClock();
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRootAsync({ useFactory: () => ({ clock, deadline: {} }) })],
      controllers: [FrontController],
      providers: [InventoryClient, { provide: VirtualClock, useValue: clock }],
    }).compile();
    app = createPlatformApp(moduleRef, platform);
    app.useGlobalFilters(new ResilienceExceptionFilter());
    await app.listen(0, '127.0.0.1');
  });

  afterAll(() => app.close());

  it('reads the header (forRootAsync)', async () => {
    const { body } = await request(app.getHttpServer())
      .get('/forward')
      .set('x-request-deadline-ms', '1500')
      .expect(200);
    expect(body).toEqual({ remaining: 1500, aborted: false, forwarded: { 'x-request-deadline-ms': '1500' } });
  });

  it('answers 504 to a request that arrives with no time left', async () => {
    await request(app.getHttpServer()).get('/budget').set('x-request-deadline-ms', '0').expect(504);
  });
});

@Injectable()
class SlowLedger {
  calls = 0;

  constructor(@Inject(VirtualClock) private readonly clock: VirtualClock) {}

  /** No time limit of its own: only the request's deadline bounds it. */
  @CircuitBreaker('ledger')
  async post(): Promise<string> {
    this.calls++;
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 5000));
    return 'posted';
  }
}

@Controller()
class LedgerController {
  constructor(private readonly ledger: SlowLedger) {}

  @Get('ledger')
  post() {
    return this.ledger.post();
  }
}

describe.each(PLATFORMS)('a request deadline that passes during a call without a time limit (%s)', (platform) => {
  const clock = new VirtualClock();
  let app: INestApplication;

  beforeAll(async () => {
    app = await boot(platform, clock, LedgerController, [SlowLedger]);
  });

  afterAll(() => app.close());

  it('ends the call at the deadline: 504, the late answer discarded, nothing recorded by the breaker', async () => {
    const response = request(app.getHttpServer())
      .get('/ledger')
      .set('x-request-deadline-ms', '300')
      .then((r) => r);
    for (let i = 0; i < 200 && app.get(SlowLedger).calls === 0; i++) await VirtualClock.settle();
    await clock.advance(300);
    const { status, body } = await response;
    expect(status).toBe(504);
    expect(body).toMatchObject({ status: 504 });
    expect(app.get(ResilienceRegistry).circuitBreaker('ledger').metrics.numberOfBufferedCalls).toBe(0);
  });
});
