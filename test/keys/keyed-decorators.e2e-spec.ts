import { Controller, Get, INestApplication, Injectable, Param } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Observable, of, throwError } from 'rxjs';
import {
  CircuitBreaker,
  RateLimiter,
  recordEvents,
  RESILIENCE_PROBLEMS,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceRegistry,
  Retry,
  VirtualClock,
} from '../../lib';
import { KEY_NOT_A_STRING } from '../../lib/kernel/resilience.messages';
import { createPlatformApp, initPlatformApp } from '../support/platforms';

/** Hosts that are down, and how many calls reached each host. */
const down = new Set<string>();
const reached = new Map<string, number>();

@Injectable()
class PaymentsClient {
  @CircuitBreaker('payments', { key: (host: string) => host })
  async charge(host: string, cents: number): Promise<string> {
    reached.set(host, (reached.get(host) ?? 0) + 1);
    if (down.has(host)) throw Object.assign(new Error(`${host} is down`), { code: 'ECONNREFUSED' });
    return `charged ${cents} at ${host}`;
  }

  @Retry('quotes', { maxAttempts: 1, key: (tenant: string) => tenant })
  @RateLimiter('quotes', { key: (tenant: string) => tenant })
  quote(tenant: string): Observable<string> {
    return down.has(tenant) ? throwError(() => new Error('no quote')) : of(`quote for ${tenant}`);
  }

  @CircuitBreaker('payments', { key: () => 42 as unknown as string })
  async badKey(): Promise<string> {
    return 'never';
  }
}

@Controller('pay')
class PaymentsController {
  constructor(private readonly client: PaymentsClient) {}

  @Get(':host')
  pay(@Param('host') host: string): Promise<string> {
    return this.client.charge(host, 100);
  }

  @Get('quote/:tenant')
  quote(@Param('tenant') tenant: string): Observable<string> {
    return this.client.quote(tenant);
  }
}

describe('key on the decorators, in a Nest app on Express', () => {
  const clock = new VirtualClock();
  let app: INestApplication;
  let registry: ResilienceRegistry;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: false,
          circuitBreaker: {
            keys: { max: 2, idleTimeout: '1h' },
            instances: {
              payments: {
                slidingWindowSize: 4,
                minimumNumberOfCalls: 4,
                failureRateThreshold: 50,
                waitDurationInOpenState: '30s',
              },
            },
          },
          rateLimiter: { instances: { quotes: { limitForPeriod: 2, limitRefreshPeriod: '1m', timeoutDuration: 0 } } },
        }),
      ],
      controllers: [PaymentsController],
      providers: [PaymentsClient],
    }).compile();
    app = createPlatformApp(moduleRef, 'express');
    app.useGlobalFilters(new ResilienceExceptionFilter());
    await initPlatformApp(app);
    registry = app.get(ResilienceRegistry);
  });
  afterAll(() => app.close());

  it('opens the breaker of the failing host only', async () => {
    const recorder = recordEvents(registry);
    down.add('down.example');
    const server = app.getHttpServer();
    for (let i = 0; i < 4; i++) await request(server).get('/pay/down.example').expect(500);
    for (let i = 0; i < 4; i++) await request(server).get('/pay/up.example').expect(200, 'charged 100 at up.example');
    const refused = await request(server).get('/pay/down.example');
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ name: 'payments' });
    await request(server).get('/pay/up.example').expect(200);
    expect(reached.get('down.example')).toBe(4);
    expect(reached.get('up.example')).toBe(5);
    expect(registry.circuitBreaker('payments', { key: 'down.example' }).state).toBe('OPEN');
    expect(registry.circuitBreaker('payments', { key: 'up.example' }).state).toBe('CLOSED');
    expect(registry.circuitBreaker('payments').state).toBe('CLOSED');
    expect(recorder.lines().filter((l) => l.includes('STATE_TRANSITION'))).toEqual([
      'circuitBreaker payments STATE_TRANSITION CLOSED_TO_OPEN',
    ]);
    expect(recorder.events.find((e) => e.type === 'STATE_TRANSITION')?.event).toEqual({
      name: 'payments',
      key: 'down.example',
      from: 'CLOSED',
      to: 'OPEN',
    });
    recorder.stop();
  });

  it('refuses a new host with 503 while every kept host holds state, and admits it once one can go', async () => {
    const server = app.getHttpServer();
    registry.circuitBreaker('payments', { key: 'up.example' }).transitionToForcedOpenState();
    const refused = await request(server).get('/pay/third.example');
    const problem = RESILIENCE_PROBLEMS.TOO_MANY_INSTANCES;
    expect(refused.status).toBe(problem.status);
    expect(refused.body).toMatchObject({ type: problem.type, name: 'payments' });
    expect(refused.body.detail).not.toContain('third.example');
    expect(reached.get('third.example')).toBeUndefined();
    registry.circuitBreaker('payments', { key: 'up.example' }).transitionToClosedState();
    await request(server).get('/pay/third.example').expect(200);
    expect([...registry.keys('circuitBreaker', 'payments').keys()].sort()).toEqual(['down.example', 'third.example']);
  });

  it('keys several layers of an Observable method: a limit per tenant', async () => {
    const server = app.getHttpServer();
    for (let i = 0; i < 2; i++) await request(server).get('/pay/quote/acme').expect(200, 'quote for acme');
    await request(server).get('/pay/quote/acme').expect(429);
    await request(server).get('/pay/quote/globex').expect(200, 'quote for globex');
    expect(registry.rateLimiter('quotes', { key: 'acme' }).metrics.availablePermissions).toBe(0);
    expect(registry.rateLimiter('quotes', { key: 'globex' }).metrics.availablePermissions).toBe(1);
  });

  it('refuses a call whose key function answers no string', async () => {
    await expect(app.get(PaymentsClient).badKey()).rejects.toThrow(
      new TypeError(KEY_NOT_A_STRING('PaymentsClient.badKey', '42')),
    );
  });
});
