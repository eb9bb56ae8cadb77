import { Controller, Get, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimiter, ResilienceExceptionFilter, ResilienceModule, VirtualClock } from '../../lib';
import { createPlatformApp, initPlatformApp, mediaType, PLATFORMS } from '../support/platforms';

@Controller('quotes')
class QuotesController {
  @Get()
  @RateLimiter('http')
  quote(): Promise<{ price: number }> {
    return Promise.resolve({ price: 42 });
  }
}

describe.each(PLATFORMS)('@RateLimiter over HTTP (%s)', (platform) => {
  let app: INestApplication;
  let clock: VirtualClock;

  beforeEach(async () => {
    clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          rateLimiter: { instances: { http: { limitForPeriod: 1, limitRefreshPeriod: '1m', timeoutDuration: 0 } } },
        }),
      ],
      controllers: [QuotesController],
    }).compile();
    app = createPlatformApp(moduleRef, platform);
    app.useGlobalFilters(new ResilienceExceptionFilter());
    await initPlatformApp(app);
  });

  afterEach(() => app.close());

  it('answers 429 with Retry-After: the time until the next period in whole seconds, rounded up', async () => {
    await clock.advance(20_500);
    await request(app.getHttpServer()).get('/quotes').expect(200, { price: 42 });
    const refused = await request(app.getHttpServer()).get('/quotes').expect(429);
    expect(refused.headers['retry-after']).toBe('40');
    expect(mediaType(refused.headers['content-type'])).toBe('application/problem+json');
    expect(refused.body).toMatchObject({ status: 429, name: 'http', title: 'Rate limit exceeded' });
  });
});
