import { INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import request from 'supertest';
import {
  RateLimiter,
  ResilienceEndpointsModule,
  ResilienceHealthIndicator,
  ResilienceModule,
  VirtualClock,
} from '../../lib';

@Injectable()
class Quotes {
  @RateLimiter('partner')
  async quote(): Promise<string> {
    return 'quote';
  }

  @RateLimiter('patient')
  async patient(): Promise<string> {
    return 'quote';
  }

  @RateLimiter('strict')
  async strict(): Promise<string> {
    return 'quote';
  }
}

/** The sample value of `name{labels}` in a Prometheus exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('rate limiter observability', () => {
  let app: INestApplication;
  let clock: VirtualClock;
  let metrics: Registry;
  let quotes: Quotes;

  beforeEach(async () => {
    clock = new VirtualClock();
    metrics = new Registry();
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: { registry: metrics },
          rateLimiter: {
            instances: {
              partner: {
                limitForPeriod: 2,
                limitRefreshPeriod: '1s',
                timeoutDuration: 0,
                registerHealthIndicator: true,
              },
              patient: {
                limitForPeriod: 1,
                limitRefreshPeriod: '1s',
                timeoutDuration: '100ms',
                registerHealthIndicator: true,
              },
              strict: {
                limitForPeriod: 1,
                limitRefreshPeriod: '1s',
                timeoutDuration: '100ms',
                registerHealthIndicator: true,
                allowHealthIndicatorToFail: true,
              },
            },
          },
        }),
        ResilienceEndpointsModule.forRoot({ status: { public: true, eventBufferSize: 10 } }),
      ],
      providers: [Quotes],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    quotes = app.get(Quotes);
  });

  afterEach(() => app.close());

  it("exports Resilience4j's series: available permissions and waiting threads, by name", async () => {
    expect(sample(await metrics.metrics(), 'resilience4j_ratelimiter_available_permissions{name="partner"}')).toBe(2);
    await quotes.quote();
    const text = await metrics.metrics();
    expect(sample(text, 'resilience4j_ratelimiter_available_permissions{name="partner"}')).toBe(1);
    expect(sample(text, 'resilience4j_ratelimiter_waiting_threads{name="partner"}')).toBe(0);
    expect(text).toContain('# TYPE resilience4j_ratelimiter_available_permissions gauge');
  });

  it('lists rate limiters and their SUCCESSFUL_ACQUIRE / FAILED_ACQUIRE events on the status endpoints', async () => {
    await quotes.quote();
    await quotes.quote();
    await quotes.quote().catch(() => undefined);
    const list = await request(app.getHttpServer()).get('/actuator/ratelimiters/partner').expect(200);
    expect(list.body.rateLimiters).toEqual([
      expect.objectContaining({
        name: 'partner',
        config: expect.objectContaining({ limitForPeriod: 2, limitRefreshPeriod: 1000, timeoutDuration: 0 }),
        metrics: { availablePermissions: 0, numberOfWaitingThreads: 0 },
      }),
    ]);
    const events = await request(app.getHttpServer()).get('/actuator/ratelimiterevents/partner').expect(200);
    expect(events.body.rateLimiterEvents.map((e: { type: string }) => e.type)).toEqual([
      'SUCCESSFUL_ACQUIRE',
      'SUCCESSFUL_ACQUIRE',
      'FAILED_ACQUIRE',
    ]);
    expect(events.body.rateLimiterEvents[2]).toMatchObject({ errorClass: 'RateLimitedError' });
  });

  it("maps health as Resilience4j's RateLimitersHealthIndicator: UP, then RATE_LIMITED (DOWN with allowHealthIndicatorToFail) while callers wait longer than the timeout", async () => {
    const health = app.get(ResilienceHealthIndicator);
    const fresh = { status: 'UP', availablePermissions: 1, numberOfWaitingThreads: 0 };
    expect(health.checkRateLimiters()).toEqual({
      rateLimiters: {
        status: 'up',
        instances: { partner: { ...fresh, availablePermissions: 2 }, patient: fresh, strict: fresh },
      },
    });
    await clock.advance(950);
    await quotes.patient();
    const waiting = quotes.patient();
    await VirtualClock.settle();
    // One caller waits 50 ms for the next period; a new one would wait 1050 ms, past the 100 ms timeout.
    const limited = { status: 'RATE_LIMITED', availablePermissions: -1, numberOfWaitingThreads: 1 };
    expect(health.checkRateLimiters('limits')).toEqual({
      limits: {
        status: 'up',
        instances: { partner: { ...fresh, availablePermissions: 2 }, patient: limited, strict: fresh },
      },
    });
    await quotes.strict();
    const strictWaiting = quotes.strict();
    await VirtualClock.settle();
    expect(health.checkRateLimiters()).toEqual({
      rateLimiters: {
        status: 'down',
        instances: {
          partner: { ...fresh, availablePermissions: 2 },
          patient: limited,
          strict: { ...limited, status: 'DOWN' },
        },
      },
    });
    await clock.advance(50);
    await Promise.all([waiting, strictWaiting]);
    expect(health.checkRateLimiters().rateLimiters.status).toBe('up');
    expect(health.checkRateLimiters().rateLimiters.instances.patient.status).toBe('UP');
  });
});
