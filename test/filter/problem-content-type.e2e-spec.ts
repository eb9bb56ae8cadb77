import { Body, Controller, Get, INestApplication, Module, Post } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import {
  CircuitBreaker,
  Idempotent,
  PlatformRequest,
  RateLimiter,
  ResilienceEndpointsModule,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceRegistry,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';
import { createPlatformApp, initPlatformApp, Platform, PLATFORMS } from '../support/platforms';

/** The one content type of every problem answer. */
const PROBLEM = 'application/problem+json; charset=utf-8';

/** Holds a request in progress until a test lets it finish; tells when one is held. */
class Gate {
  private release!: () => void;
  private arrive!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.release = resolve));
  readonly entered = new Promise<void>((resolve) => (this.arrive = resolve));

  hold(): Promise<void> {
    this.arrive();
    return this.opened;
  }

  open(): void {
    this.release();
  }
}

let gate = new Gate();

@Controller()
class ShopController {
  @Post('pay')
  @Idempotent({ principal: (req: PlatformRequest) => req.headers['x-customer']?.toString() })
  async pay(@Body() body: { amount: number }): Promise<{ charged: number }> {
    if (body.amount === 1) await gate.hold();
    return { charged: body.amount };
  }

  @Get('breaker')
  @CircuitBreaker('psp')
  breaker(): Promise<string> {
    return Promise.resolve('ok');
  }

  @Get('limited')
  @RateLimiter('api')
  limited(): Promise<string> {
    return Promise.resolve('ok');
  }

  @Get('slow')
  slow(): Promise<never> {
    return Promise.reject(new TimeoutExceededError('inventory', 2000));
  }

  @Get('held')
  held(): Promise<string> {
    return gate.hold().then(() => 'done');
  }
}

/** An application with every kind of problem answer the library writes. */
async function boot(
  platform: Platform,
  loadShedding: boolean,
  filter: 'new' | 'APP_FILTER',
): Promise<INestApplication> {
  @Module({
    imports: [
      ResilienceModule.forRoot({
        clock: new VirtualClock(),
        metrics: false,
        deadline: {},
        ...(loadShedding ? { loadShedding: { maxConcurrentRequests: 1 } } : {}),
        rateLimiter: { instances: { api: { limitForPeriod: 1, limitRefreshPeriod: '1h', timeoutDuration: 0 } } },
      }),
      ResilienceEndpointsModule.forRoot({ status: { public: true } }),
    ],
    controllers: [ShopController],
    providers: filter === 'APP_FILTER' ? [{ provide: APP_FILTER, useClass: ResilienceExceptionFilter }] : [],
  })
  class ShopModule {}
  const moduleRef = await Test.createTestingModule({ imports: [ShopModule] }).compile();
  const app = createPlatformApp(moduleRef, platform);
  if (filter === 'new') app.useGlobalFilters(new ResilienceExceptionFilter());
  await initPlatformApp(app);
  await app.listen(0, '127.0.0.1');
  return app;
}

async function baseUrl(app: INestApplication): Promise<string> {
  return (await app.getUrl()).replace('[::1]', '127.0.0.1');
}

describe.each(PLATFORMS.flatMap((p) => [[p, 'new'] as const, [p, 'APP_FILTER'] as const]))(
  'problem answers on %s, filter registered as %s',
  (platform, filter) => {
    let app: INestApplication;
    let shedding: INestApplication;

    beforeAll(async () => {
      gate = new Gate();
      app = await boot(platform, false, filter);
      shedding = await boot(platform, true, filter);
      app.get(ResilienceRegistry).circuitBreaker('psp').transitionToForcedOpenState();
    });
    afterAll(async () => {
      gate.open();
      await app.close();
      await shedding.close();
    });

    it('have one content type, whatever writes them', async () => {
      const url = await baseUrl(app);
      const pay = (key: string | undefined, amount: number, customer: string | null = 'c1') =>
        fetch(`${url}/pay`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(key === undefined ? {} : { 'idempotency-key': key }),
            ...(customer === null ? {} : { 'x-customer': customer }),
          },
          body: JSON.stringify({ amount }),
        });
      const answers: Record<string, Response> = {};
      answers['400 key missing'] = await pay(undefined, 5);
      answers['401 principal missing'] = await pay('k0', 5, null);
      expect((await pay('k1', 5)).status).toBe(201);
      answers['422 key reused'] = await pay('k1', 6);
      const running = pay('k2', 1);
      await gate.entered;
      answers['409 key in progress'] = await pay('k2', 1);
      answers['404 status route'] = await fetch(`${url}/actuator/circuitbreakers/nope`);
      answers['503 breaker open'] = await fetch(`${url}/breaker`);
      expect((await fetch(`${url}/limited`)).status).toBe(200);
      answers['429 rate limited'] = await fetch(`${url}/limited`);
      answers['504 timeout'] = await fetch(`${url}/slow`);
      answers['504 no time left'] = await fetch(`${url}/breaker`, { headers: { 'x-request-deadline-ms': '0' } });

      const door = await baseUrl(shedding);
      gate.open();
      expect((await running).status).toBe(201);
      gate = new Gate();
      const holding = fetch(`${door}/held`);
      await gate.entered;
      answers['503 overloaded'] = await fetch(`${door}/breaker`);
      answers['504 no time left at the door'] = await fetch(`${door}/breaker`, {
        headers: { 'x-request-deadline-ms': '0' },
      });
      gate.open();
      expect((await holding).status).toBe(200);

      const seen = Object.fromEntries(
        Object.entries(answers).map(([what, answer]) => [
          what,
          `${answer.status} ${answer.headers.get('content-type') ?? 'none'}`,
        ]),
      );
      expect(seen).toEqual(
        Object.fromEntries(Object.keys(answers).map((what) => [what, `${what.slice(0, 3)} ${PROBLEM}`])),
      );
      for (const answer of Object.values(answers)) expect(await answer.json()).toHaveProperty('status', answer.status);
    });
  },
);
